package gen

import "strings"

// Org is an organization of the synthetic corpus.
type Org struct {
	Name string
	Slug string
}

// orgNames lists the organizations in order of popularity: the generator
// draws them with Zipf-like weights by position, so the first few hold a
// large share of the incidents. The list mixes well-known-sounding names with
// invented ones; all names are Latin so that slugs derive from them.
var orgNames = []string{
	// Frequent publishers of postmortems.
	"Cloudflare", "GitHub", "Amazon Web Services", "Google Cloud", "Microsoft Azure",
	"Slack", "Roblox", "Kakao", "GitLab", "Fastly",
	"Discord", "Atlassian", "Naver", "Heroku", "Stripe",
	"Shopify", "Reddit", "Spotify", "Netflix", "Dropbox",
	"Datadog", "PagerDuty", "Twilio", "Zoom", "Salesforce",
	"Fly.io", "DigitalOcean", "Linode", "Vercel", "Netlify",
	"Render", "Railway", "Supabase", "PlanetScale", "MongoDB Atlas",
	"Elastic", "Confluent", "HashiCorp", "Docker", "npm",
	"PyPI", "RubyGems", "Travis CI", "CircleCI", "Buildkite",
	"Sentry", "Honeycomb", "New Relic", "Grafana Labs", "Auth0",
	"Okta", "Let's Encrypt", "Mozilla", "Wikimedia", "Epic Games",
	"Valve", "Riot Games", "Niantic", "Coinbase", "Robinhood",
	"Monzo", "Starling Bank", "Square", "Etsy", "Pinterest",
	"Yelp", "Zalando", "Booking.com", "Toss", "Coupang",
	"Line", "Woowa Brothers", "Daangn", "Krafton", "Nexon",
	"Tailscale", "Basecamp", "Notion", "Figma", "Asana",
	"Cockroach Labs", "Akamai", "Backblaze", "Mailgun", "SendGrid",
	// Invented organizations.
	"Veltrix", "Northwind Cloud", "Bluepeak Systems", "Quillstack", "Hanbit Pay",
	"Orbitra", "Lumenfield", "Cobaltline", "Sparrowhost", "Driftwood Labs",
	"Kestrel Networks", "Mapleleaf Data", "Tidewater", "Ironbark", "Polaris Metrics",
	"Nimbusfort", "Greyhound Compute", "Seolhwa Games", "Hanul Telecom", "Dasom Bank",
	"Gaon Logistics", "Byeol Commerce", "Mirae Mobility", "Pinecrest", "Zephyr Stream",
	"Quartzline", "Amberlight", "Copperfield Retail", "Redwood Payments", "Silverlake Health",
	"Halcyon Air", "Brightwave", "Foxglove", "Larkspur", "Obsidian Grid",
	"Saffron Foods", "Tern Logistics", "Vantage Rail", "Wexford Insurance", "Yarrow Media",
	"Zinnia Labs", "Acorn Ledger", "Birchwood", "Cinder", "Dovetail",
	"Evergreen Transit", "Fernhill", "Glacier Point", "Indigo Post", "Kiwi Pay",
	"Lattice Bay", "Meridian Health", "Nova Ledger", "Oakmont", "Pebblestack",
	"Quokka Games", "Riverbend", "Summit Cloud", "Thistle", "Vireo",
	"Willow Mail", "Yonder", "Zenith Bank", "Arirang Cloud", "Bora Streaming",
}

// Orgs is the organizations of the corpus in order of popularity, each with
// its slug. The slug is a function of the name, so the same name always has
// the same slug.
var Orgs = func() []Org {
	orgs := make([]Org, len(orgNames))
	for i, n := range orgNames {
		orgs[i] = Org{Name: n, Slug: Slugify(n)}
	}
	return orgs
}()

// Slugify turns a name into a slug: lowercase ASCII letters and digits in
// hyphen-separated words ("Fly.io" -> "fly-io", "Let's Encrypt" ->
// "lets-encrypt").
func Slugify(name string) string {
	var b strings.Builder
	hyphen := false
	for _, r := range name {
		switch {
		case r == '\'':
			continue
		case 'a' <= r && r <= 'z', '0' <= r && r <= '9':
		case 'A' <= r && r <= 'Z':
			r += 'a' - 'A'
		default:
			hyphen = b.Len() > 0
			continue
		}
		if hyphen {
			b.WriteByte('-')
			hyphen = false
		}
		b.WriteRune(r)
	}
	return b.String()
}
