package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// serveFlags returns the names of serve's flags, from its -h output.
func serveFlags(t *testing.T) map[string]bool {
	t.Helper()
	var stderr bytes.Buffer
	_ = run(context.Background(), []string{"serve", "-h"}, func(string) string { return "" }, strings.NewReader(""), io.Discard, &stderr)
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(stderr.String(), -1) {
		names[m[1]] = true
	}
	if !names["db"] || !names["cluster-peers"] {
		t.Fatalf("serve -h lists no flags such as db and cluster-peers:\n%s", stderr.String())
	}
	return names
}

// TestManifestsAndDockerfile checks docs/kubernetes.yaml and the
// Dockerfile against the program: the image names agree (Dockerfile,
// Makefile's image target, every container), every argument and
// INCIDENTLIB_ variable a container passes is a flag of serve, and the
// containers run as non-root.
func TestManifestsAndDockerfile(t *testing.T) {
	flags := serveFlags(t)
	docker, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^LABEL org\.opencontainers\.image\.ref\.name="([^"]+)"`).FindSubmatch(docker)
	if m == nil {
		t.Fatal("the Dockerfile names no image (LABEL org.opencontainers.image.ref.name)")
	}
	image := string(m[1])
	var user, cmd string
	sc := bufio.NewScanner(bytes.NewReader(docker))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if u, ok := strings.CutPrefix(line, "USER "); ok {
			user = u
		}
		if c, ok := strings.CutPrefix(line, "CMD "); ok {
			cmd = c
		}
	}
	if user == "" || strings.HasPrefix(user, "root") || strings.HasPrefix(user, "0:") || user == "0" {
		t.Errorf("the Dockerfile's final USER is %q: want a non-root user", user)
	}
	checkArgs(t, flags, "Dockerfile CMD", regexp.MustCompile(`"([^"]*)"`).FindAllString(cmd, -1))
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(makefile, []byte("docker build -t "+image+":")) {
		t.Errorf("make image does not tag %s", image)
	}

	f, err := os.Open("../../docs/kubernetes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	containers := 0
	for {
		var doc struct {
			Kind string
			Spec struct {
				Template struct {
					Spec struct {
						SecurityContext struct {
							RunAsNonRoot bool `yaml:"runAsNonRoot"`
							RunAsUser    *int `yaml:"runAsUser"`
						} `yaml:"securityContext"`
						Containers []struct {
							Name  string
							Image string
							Args  []string
							Env   []struct{ Name, Value string }
						}
					}
				}
			}
		}
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pod := doc.Spec.Template.Spec
		for _, c := range pod.Containers {
			containers++
			where := doc.Kind + "/" + c.Name
			if img, _, _ := strings.Cut(c.Image, ":"); img != image {
				t.Errorf("%s runs image %s, the Dockerfile builds %s", where, c.Image, image)
			}
			if !pod.SecurityContext.RunAsNonRoot || pod.SecurityContext.RunAsUser == nil || *pod.SecurityContext.RunAsUser == 0 {
				t.Errorf("%s does not run as a non-root user", where)
			}
			if len(c.Args) == 0 || c.Args[0] != "serve" {
				t.Errorf("%s runs %v, want serve", where, c.Args)
			}
			checkArgs(t, flags, where, c.Args)
			for _, e := range c.Env {
				name, ok := strings.CutPrefix(e.Name, "INCIDENTLIB_")
				if !ok {
					continue
				}
				flag := strings.ToLower(strings.ReplaceAll(name, "_", "-"))
				if !flags[flag] {
					t.Errorf("%s sets %s, but serve has no flag --%s", where, e.Name, flag)
				}
			}
		}
	}
	if containers < 3 {
		t.Fatalf("found %d containers in the manifests, want the primary's, the replicas' and the cluster's", containers)
	}
}

// checkArgs fails for each --flag of args that serve does not have.
func checkArgs(t *testing.T, flags map[string]bool, where string, args []string) {
	for _, a := range args {
		a = strings.Trim(a, `"`)
		if name, ok := strings.CutPrefix(a, "-"); ok {
			name = strings.TrimPrefix(name, "-")
			name, _, _ = strings.Cut(name, "=")
			if !flags[name] {
				t.Errorf("%s passes %s, which is no flag of serve", where, a)
			}
		}
	}
}
