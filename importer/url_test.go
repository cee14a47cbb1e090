package importer

import "testing"

func TestNormalizeURL(t *testing.T) {
	cases := []struct{ in, want string }{
		{"https://example.com/a", "https://example.com/a"},
		{"http://example.com/a", "https://example.com/a"},
		{"HTTPS://Example.COM/a", "https://example.com/a"},
		{"https://www.example.com/a", "https://example.com/a"},
		{"https://example.com:443/a", "https://example.com/a"},
		{"http://example.com:80/a", "https://example.com/a"},
		{"https://example.com:8443/a", "https://example.com:8443/a"},
		{"https://example.com/a/", "https://example.com/a"},
		{"https://example.com/", "https://example.com"},
		{"https://example.com", "https://example.com"},
		{"https://example.com/a#section-2", "https://example.com/a"},
		{"https://example.com/a?utm_source=x&utm_medium=y", "https://example.com/a"},
		{"https://example.com/a?id=3&utm_campaign=z&b=4", "https://example.com/a?id=3&b=4"},
		{"https://example.com/a?", "https://example.com/a"},
		{"https://example.com/Path/Case", "https://example.com/Path/Case"},
		{"https://example.com./a", "https://example.com/a"},
		{"  https://example.com/a  ", "https://example.com/a"},
		{"https://groups.google.com/forum/?fromgroups=#!topic/g/p2Q", "https://groups.google.com/forum?fromgroups=#!topic/g/p2Q"},
		{"http://[::1]:80/x", "https://[::1]/x"},
		{"not a url", "not a url"},
		{"ftp://example.com/a", "ftp://example.com/a"},
		{"/relative/path", "/relative/path"},
	}
	for _, c := range cases {
		if got := NormalizeURL(c.in); got != c.want {
			t.Errorf("NormalizeURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// The same AWS message in two collections.
	if NormalizeURL("http://aws.amazon.com/message/2329B7") != NormalizeURL("http://aws.amazon.com/message/2329B7/") {
		t.Error("trailing slash makes a difference")
	}
}

func TestDuplicateURLs(t *testing.T) {
	res := mustLoad(t, Options{}, "testdata/macintux", "testdata/linklist")
	// No URL is in both fixtures.
	if d := res.DuplicateURLs(); len(d) != 0 {
		t.Errorf("duplicates %v", d)
	}
	res2, err := LoadData("more.md", []byte("- [GitHub](http://www.github.com/blog/1364-downtime-last-saturday/). Again.\n"), Options{Collection: "other"})
	if err != nil {
		t.Fatal(err)
	}
	res.Records = append(res.Records, res2.Records...)
	d := res.DuplicateURLs()
	keys := d["https://github.com/blog/1364-downtime-last-saturday"]
	if len(d) != 1 || len(keys) != 2 || keys[1] != "other/https://github.com/blog/1364-downtime-last-saturday" {
		t.Errorf("duplicates %v", d)
	}
}
