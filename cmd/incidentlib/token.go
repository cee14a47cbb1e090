package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph"
	"github.com/incidentlib/incidentlib/storage"
)

// runToken manages the API tokens (docs/editing.md):
//
//	incidentlib token add    --db PATH --name NAME --role editor|reviewer|admin [--expires 720h|30d|2027-01-31]
//	incidentlib token list   --db PATH
//	incidentlib token revoke --db PATH NAME
//
// Each works on a closed store (--db, which token add creates when no file
// is there: taxonomy only, so the seeds still load into it), on the store
// of a running server that holds it through the server's control socket
// (--db still; controlsocket.go), or, with --server URL --token
// ADMIN_TOKEN, through a running server's admin mutations (createToken,
// tokens, revokeToken).
func runToken(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("token: say add, list or revoke (incidentlib token add --name NAME --role editor)")
	}
	sub, args := args[0], args[1:]
	f := newFlags("token "+sub, getenv, stderr)
	sf := addStoreFlags(f)
	rf := addRemoteFlags(f, "manage the tokens of the running server at this URL instead of opening --db")
	f.checks = append(f.checks, func() error {
		dbSet := false
		f.Visit(func(fl *flag.Flag) { dbSet = dbSet || fl.Name == "db" })
		if dbSet && rf.remote() {
			return errors.New("--db and --server name two stores: give one")
		}
		return nil
	})
	ctl := addControlSocketFlag(f, sf)
	// with opens the store or, when a running server holds it, reaches
	// that server through its control socket (controlsocket.go), saying
	// what to do when neither can be.
	with := func(readOnly bool, fn func(tokenOps) error) error {
		err := sf.with(readOnly, func(db *storage.DB) error { return fn(db.Tokens()) })
		if errors.Is(err, storage.ErrLocked) {
			return withControl(err, ctl, fn)
		}
		return err
	}
	switch sub {
	case "add":
		name := f.str("name", "", "the token's name: the author of every write made with it (required)")
		role := f.str("role", "", "editor, reviewer or admin (required)")
		expires := f.str("expires", "", "when the token stops working: a duration from now (720h, 30d) or a date (2027-01-31, RFC 3339); empty: never")
		var r incidentlib.Role
		var until time.Time
		f.checks = append(f.checks, func() error {
			if why := incidentlib.ValidTokenName(*name); why != "" {
				return fmt.Errorf("--name: %s", why)
			}
			var err error
			if r, err = incidentlib.ParseRole(*role); err != nil {
				return fmt.Errorf("--role: %s", incidentlib.ErrorMessage(err))
			}
			if *expires != "" {
				if until, err = parseExpires(*expires, time.Now()); err != nil {
					return fmt.Errorf("--expires: %v", err)
				}
			}
			return nil
		})
		if err := parseNoArgs(f, args); err != nil {
			return err
		}
		if rf.remote() {
			return tokenAddRemote(ctx, rf, *name, r, until, stdout)
		}
		return with(false, func(db tokenOps) error {
			secret, info, err := db.CreateToken(ctx, *name, r, until)
			if err != nil {
				return fmt.Errorf("token add: %s", incidentlib.ErrorMessage(err))
			}
			printNewToken(stdout, info.Name, info.Role.String(), info.Expires, secret)
			return nil
		})
	case "list":
		if err := parseNoArgs(f, args); err != nil {
			return err
		}
		if rf.remote() {
			return tokenListRemote(ctx, rf, stdout)
		}
		return with(true, func(db tokenOps) error {
			infos, err := db.ListTokens(ctx)
			if err != nil {
				return err
			}
			printTokens(stdout, infos, time.Now())
			return nil
		})
	case "revoke":
		names, err := parseWithNames(f, args)
		if err != nil {
			return err
		}
		if len(names) != 1 {
			return errors.New("token revoke: name one token: incidentlib token revoke NAME")
		}
		name := names[0]
		if rf.remote() {
			return tokenRevokeRemote(ctx, rf, name, stdout)
		}
		return with(false, func(db tokenOps) error {
			if _, err := db.RevokeToken(ctx, name); err != nil {
				return fmt.Errorf("token revoke: %s", incidentlib.ErrorMessage(err))
			}
			fmt.Fprintf(stdout, "revoked the token %q\n", name)
			return nil
		})
	}
	return fmt.Errorf("token: unknown subcommand %q: add, list or revoke", sub)
}

// parseWithNames parses flags before and after the names among args
// (token revoke NAME --server URL).
func parseWithNames(f *flags, args []string) ([]string, error) {
	if err := f.parse(args); err != nil {
		return nil, err
	}
	var names []string
	for f.NArg() > 0 {
		names = append(names, f.Arg(0))
		if err := f.Parse(f.Args()[1:]); err != nil { // the command line only: the environment was read
			return nil, err
		}
	}
	for _, c := range f.checks {
		if err := c(); err != nil {
			return nil, err
		}
	}
	return names, nil
}

func parseNoArgs(f *flags, args []string) error {
	if err := f.parse(args); err != nil {
		return err
	}
	if f.NArg() > 0 {
		return fmt.Errorf("%s: unexpected arguments %q", f.Name(), f.Args())
	}
	return nil
}

// parseExpires reads --expires: a positive duration from now (Go's, or a
// whole number of days such as 30d), or a date (YYYY-MM-DD, midnight
// UTC; RFC 3339), which must be in the future.
func parseExpires(s string, now time.Time) (time.Time, error) {
	var t time.Time
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return t, fmt.Errorf("%q is not a number of days such as 30d", s)
		}
		t = now.Add(time.Duration(n) * 24 * time.Hour)
	} else if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return t, fmt.Errorf("the duration %s is not positive", s)
		}
		t = now.Add(d)
	} else if t, err = graph.ParseExpiry(s); err != nil {
		return t, fmt.Errorf("%q is neither a duration (720h, 30d) nor a date (2027-01-31, RFC 3339)", s)
	}
	if !t.After(now) {
		return t, fmt.Errorf("%s is not in the future", s)
	}
	return t.UTC().Truncate(time.Second), nil
}

// publicNameNotice says, when a token is made, that its name is public
// (docs/editing.md, "Author names are public").
func publicNameNotice(name string) string {
	return fmt.Sprintf("The name %q is public: every write made with this token shows it as the author to anyone who reads the library "+
		"(review.writtenBy and reviewedBy, the history, IL-JSON exports). Use a name you may publish.", name)
}

// printNewToken writes what was made and then the secret, alone on the
// last line, so that a script can take it with tail -n 1.
func printNewToken(w io.Writer, name, role string, expires time.Time, secret string) {
	until := "never expires"
	if !expires.IsZero() {
		until = "expires " + expires.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(w, "created the %s token %q (%s).\n", role, name, until)
	fmt.Fprintf(w, "%s\n", publicNameNotice(name))
	fmt.Fprintf(w, "The token is shown this once and only its hash is kept:\n%s\n", secret)
}

func printTokens(w io.Writer, infos []*incidentlib.TokenInfo, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tROLE\tCREATED\tEXPIRES\tLAST USED\tSTATE")
	at := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	}
	for _, t := range infos {
		state := "active"
		switch {
		case !t.Revoked.IsZero():
			state = "revoked " + at(t.Revoked)
		case !t.Active(now):
			state = "expired"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.Role, at(t.Created), at(t.Expires), at(t.LastUsed), state)
	}
	tw.Flush()
}

// The same through a running server's admin mutations.

type remoteToken struct {
	Name       string
	Role       string
	CreatedAt  string
	ExpiresAt  *string
	LastUsedAt *string
	RevokedAt  *string
	Active     bool
}

type remoteUserErrors []struct {
	Field   []string
	Message string
}

func (ues remoteUserErrors) err(what string) error {
	if len(ues) == 0 {
		return nil
	}
	msgs := make([]string, len(ues))
	for i, e := range ues {
		msgs[i] = e.Message
	}
	return fmt.Errorf("%s: %s", what, strings.Join(msgs, "; "))
}

func tokenAddRemote(ctx context.Context, rf remoteFlags, name string, role incidentlib.Role, until time.Time, stdout io.Writer) error {
	r, err := rf.dial()
	if err != nil {
		return err
	}
	defer r.close()
	vars := map[string]any{"name": name, "role": strings.ToUpper(role.String())}
	if !until.IsZero() {
		vars["expiresAt"] = until.UTC().Format(time.RFC3339)
	}
	var out struct {
		CreateToken struct {
			Token      *string
			Info       *remoteToken
			UserErrors remoteUserErrors
		} `json:"createToken"`
	}
	err = r.graphql(ctx, `mutation CreateToken($name: String!, $role: TokenRole!, $expiresAt: String) {
  createToken(name: $name, role: $role, expiresAt: $expiresAt) { token info { name role expiresAt } userErrors { field message } }
}`, vars, &out)
	if err != nil {
		return fmt.Errorf("token add: %w", err)
	}
	p := out.CreateToken
	if err := p.UserErrors.err("token add"); err != nil {
		return err
	}
	if p.Token == nil || p.Info == nil {
		return errors.New("token add: the server answered no token")
	}
	var exp time.Time
	if p.Info.ExpiresAt != nil {
		exp, _ = time.Parse(time.RFC3339, *p.Info.ExpiresAt)
	}
	printNewToken(stdout, p.Info.Name, strings.ToLower(p.Info.Role), exp, *p.Token)
	return nil
}

func tokenListRemote(ctx context.Context, rf remoteFlags, stdout io.Writer) error {
	r, err := rf.dial()
	if err != nil {
		return err
	}
	defer r.close()
	var out struct{ Tokens []remoteToken }
	if err := r.graphql(ctx, `query Tokens { tokens { name role createdAt expiresAt lastUsedAt revokedAt active } }`, nil, &out); err != nil {
		return fmt.Errorf("token list: %w", err)
	}
	infos := make([]*incidentlib.TokenInfo, len(out.Tokens))
	parse := func(s *string) time.Time {
		if s == nil {
			return time.Time{}
		}
		t, _ := time.Parse(time.RFC3339, *s)
		return t
	}
	for i, t := range out.Tokens {
		role, _ := incidentlib.ParseRole(t.Role)
		created, _ := time.Parse(time.RFC3339, t.CreatedAt)
		infos[i] = &incidentlib.TokenInfo{Name: t.Name, Role: role, Created: created, Expires: parse(t.ExpiresAt),
			LastUsed: parse(t.LastUsedAt), Revoked: parse(t.RevokedAt)}
	}
	printTokens(stdout, infos, time.Now())
	return nil
}

func tokenRevokeRemote(ctx context.Context, rf remoteFlags, name string, stdout io.Writer) error {
	r, err := rf.dial()
	if err != nil {
		return err
	}
	defer r.close()
	var out struct {
		RevokeToken struct{ UserErrors remoteUserErrors } `json:"revokeToken"`
	}
	err = r.graphql(ctx, `mutation RevokeToken($name: String!) { revokeToken(name: $name) { userErrors { field message } } }`,
		map[string]any{"name": name}, &out)
	if err != nil {
		return fmt.Errorf("token revoke: %w", err)
	}
	if err := out.RevokeToken.UserErrors.err("token revoke"); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "revoked the token %q\n", name)
	return nil
}
