package cluster

import (
	"bytes"
	"context"
	"slices"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/glossary"
)

// The admin's writes through the log: API tokens, the taxonomy and the
// organizations (rule set 2, rulesOf), the glossary (rule set 4). Each is checked on the receiving
// node where the check needs no stored state, published on
// SubjectLibrary (they are no incident's: the store judges them at apply
// against the state every node holds at that position) with the author
// the node authenticated, and answered with this node's apply.

// taxonomy is the taxonomy the writer checks records by: the store's
// current one (an admin's change replaces it), else the one the writer
// was made with.
func (wr *Writer) taxonomy() *incidentlib.Taxonomy {
	if wr.taxonomies != nil {
		if t := wr.taxonomies.Taxonomy(); t != nil {
			return t
		}
	}
	return wr.tax
}

// adminWrite publishes an admin's write on SubjectLibrary, author being
// the author when ctx carries no identity (write sets the identity's).
// The admin writes of one request (several mutations of one document)
// each have their own key, as every write has (idempotency.go).
func (wr *Writer) adminWrite(ctx context.Context, author string, w *Write) (Result, error) {
	w.Author = author
	res, err := wr.write(ctx, SubjectLibrary, w)
	if err != nil {
		return Result{}, err
	}
	return res, res.Err
}

// CreateToken makes the token's secret on this node and publishes only
// its hash; the secret is answered once this node applied the write, and
// never enters the log. See incidentlib.TokenIssuer.
func (wr *Writer) CreateToken(ctx context.Context, name string, role incidentlib.Role, expires time.Time) (string, *incidentlib.TokenInfo, error) {
	if err := incidentlib.ValidateNewToken(name, role, expires, wr.Now().UTC().Truncate(time.Second)); err != nil {
		return "", nil, err
	}
	secret, hash, err := incidentlib.NewTokenSecret()
	if err != nil {
		return "", nil, err
	}
	res, err := wr.createToken(ctx, name, role, hash, expires)
	if err != nil {
		return "", nil, err
	}
	if !bytes.Equal(res.tokenHash, hash) {
		// A retry (the same idempotency key) of a creation whose answer
		// was lost: its secret is not known here.
		return "", nil, incidentlib.FieldErrorf(incidentlib.ECONFLICT, []string{"name"},
			"the token %q was made by an earlier try of this request, whose secret is shown only once: revoke it and make another", name)
	}
	return secret, res.Token, nil
}

func (wr *Writer) createToken(ctx context.Context, name string, role incidentlib.Role, hash []byte, expires time.Time) (Result, error) {
	w := &Write{Op: OpTokenCreate, Name: name, TokenRole: role.String(), TokenHash: hash}
	if !expires.IsZero() {
		w.Expires = expires.UTC()
	}
	return wr.adminWrite(ctx, "", w)
}

// RevokeToken publishes a revocation; see incidentlib.TokenIssuer.
func (wr *Writer) RevokeToken(ctx context.Context, name string) (*incidentlib.TokenInfo, error) {
	if incidentlib.ValidTokenName(name) != "" {
		return nil, incidentlib.FieldErrorf(incidentlib.ENOTFOUND, []string{"name"}, "no token is named %q", name)
	}
	res, err := wr.adminWrite(ctx, "", &Write{Op: OpTokenRevoke, Name: name})
	return res.Token, err
}

// AddTerm publishes a new term; see incidentlib.TaxonomyWriter.
func (wr *Writer) AddTerm(ctx context.Context, author string, in incidentlib.Term) (*incidentlib.Term, error) {
	t := in
	t.Deprecated = false
	t.Aliases = slices.Clone(in.Aliases)
	if err := t.Validate(); err != nil {
		return nil, err
	}
	res, err := wr.adminWrite(ctx, author, &Write{Op: OpTermAdd, Term: &t})
	return res.Term, err
}

// UpdateTerm publishes a change of a term's texts; see
// incidentlib.TaxonomyWriter.
func (wr *Writer) UpdateTerm(ctx context.Context, author string, kind incidentlib.TermKind, slug string, u incidentlib.TermUpdate) (*incidentlib.Term, error) {
	if err := firstError(incidentlib.ValidateTermKind(kind), incidentlib.ValidateTermUpdate(u)); err != nil {
		return nil, err
	}
	res, err := wr.adminWrite(ctx, author, &Write{Op: OpTermUpdate, Kind: kind, Slug: slug, TermUpdate: &u})
	return res.Term, err
}

// AddTermAliases publishes aliases of a term; see
// incidentlib.TaxonomyWriter.
func (wr *Writer) AddTermAliases(ctx context.Context, author string, kind incidentlib.TermKind, slug string, aliases []string) (*incidentlib.Term, error) {
	if err := firstError(incidentlib.ValidateTermKind(kind), incidentlib.ValidateAliases(aliases)); err != nil {
		return nil, err
	}
	res, err := wr.adminWrite(ctx, author, &Write{Op: OpTermAliases, Kind: kind, Slug: slug, Aliases: aliases})
	return res.Term, err
}

// DeprecateTerm publishes a term's deprecation or its taking back; see
// incidentlib.TaxonomyWriter.
func (wr *Writer) DeprecateTerm(ctx context.Context, author string, kind incidentlib.TermKind, slug string, deprecated bool) (*incidentlib.Term, error) {
	if err := incidentlib.ValidateTermKind(kind); err != nil {
		return nil, err
	}
	res, err := wr.adminWrite(ctx, author, &Write{Op: OpTermDeprecate, Kind: kind, Slug: slug, Deprecated: deprecated})
	return res.Term, err
}

// AddOrganization publishes a new organization; see
// incidentlib.TaxonomyWriter.
func (wr *Writer) AddOrganization(ctx context.Context, author string, o incidentlib.Organization) (*incidentlib.Organization, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	res, err := wr.adminWrite(ctx, author, &Write{Op: OpOrgAdd, Organization: &o})
	return res.Organization, err
}

// RenameOrganization publishes an organization's new name, which apply
// writes on every incident that names it; see incidentlib.TaxonomyWriter.
func (wr *Writer) RenameOrganization(ctx context.Context, author, slug, name string) (*incidentlib.Organization, *incidentlib.MergeResult, error) {
	if err := incidentlib.ValidateOrganizationName(name); err != nil {
		return nil, nil, err
	}
	res, err := wr.adminWrite(ctx, author, &Write{Op: OpOrgRename, Slug: slug, Name: name})
	if err != nil {
		return nil, nil, err
	}
	return res.Organization, res.Merged, nil
}

// MergeOrganizations publishes a merge; see incidentlib.TaxonomyWriter.
func (wr *Writer) MergeOrganizations(ctx context.Context, author, from, into string) (*incidentlib.MergeResult, error) {
	if err := incidentlib.ValidateMerge(from, into); err != nil {
		return nil, err
	}
	res, err := wr.adminWrite(ctx, author, &Write{Op: OpOrgMerge, From: from, Into: into})
	return res.Merged, err
}

// AddGlossaryEntry publishes a new glossary entry; see
// incidentlib.TaxonomyWriter.
func (wr *Writer) AddGlossaryEntry(ctx context.Context, author string, e incidentlib.GlossaryEntry) (*incidentlib.GlossaryEntry, error) {
	if err := glossary.Validate(&e); err != nil {
		return nil, err
	}
	res, err := wr.adminWrite(ctx, author, &Write{Op: OpGlossaryAdd, Glossary: &e})
	return res.Glossary, err
}

// UpdateGlossaryEntry publishes a glossary entry's change; see
// incidentlib.TaxonomyWriter.
func (wr *Writer) UpdateGlossaryEntry(ctx context.Context, author, key string, e incidentlib.GlossaryEntry) (*incidentlib.GlossaryEntry, error) {
	if err := firstError(glossary.ValidateKey(key), glossary.Validate(&e)); err != nil {
		return nil, err
	}
	res, err := wr.adminWrite(ctx, author, &Write{Op: OpGlossaryUpdate, GlossaryKey: key, Glossary: &e})
	return res.Glossary, err
}

// RemoveGlossaryEntry publishes a glossary entry's removal; see
// incidentlib.TaxonomyWriter.
func (wr *Writer) RemoveGlossaryEntry(ctx context.Context, author, key string) (*incidentlib.GlossaryEntry, error) {
	if err := glossary.ValidateKey(key); err != nil {
		return nil, err
	}
	res, err := wr.adminWrite(ctx, author, &Write{Op: OpGlossaryRemove, GlossaryKey: key})
	return res.Glossary, err
}

// firstError returns the first error that is not nil.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// applyAdmin applies an admin's write w to the store, its answer in res;
// false when w is no admin's write.
func (a *Applier) applyAdmin(ctx context.Context, w *Write, res *Result) bool {
	s := a.store
	switch w.Op {
	case OpTokenCreate:
		role, err := incidentlib.ParseRole(w.TokenRole)
		if err != nil {
			res.Err = incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"role"}, "%s", incidentlib.ErrorMessage(err))
			break
		}
		res.Token, res.Err = s.CreateTokenHash(ctx, w.Name, role, w.TokenHash, w.Expires)
		res.tokenHash = w.TokenHash
	case OpTokenRevoke:
		res.Token, res.Err = s.RevokeToken(ctx, w.Name)
	case OpTermAdd:
		if w.Term == nil {
			res.Err = incidentlib.Errorf(incidentlib.EINVALID, "a term_add write carries no term")
			break
		}
		res.Term, res.Err = s.AddTerm(ctx, w.Author, *w.Term)
	case OpTermUpdate:
		var u incidentlib.TermUpdate
		if w.TermUpdate != nil {
			u = *w.TermUpdate
		}
		res.Term, res.Err = s.UpdateTerm(ctx, w.Author, w.Kind, w.Slug, u)
	case OpTermAliases:
		res.Term, res.Err = s.AddTermAliases(ctx, w.Author, w.Kind, w.Slug, w.Aliases)
	case OpTermDeprecate:
		res.Term, res.Err = s.DeprecateTerm(ctx, w.Author, w.Kind, w.Slug, w.Deprecated)
	case OpOrgAdd:
		if w.Organization == nil {
			res.Err = incidentlib.Errorf(incidentlib.EINVALID, "an org_add write carries no organization")
			break
		}
		res.Organization, res.Err = s.AddOrganization(ctx, w.Author, *w.Organization)
	case OpOrgRename:
		res.Organization, res.Merged, res.Err = s.RenameOrganization(ctx, w.Author, w.Slug, w.Name)
	case OpOrgMerge:
		res.Merged, res.Err = s.MergeOrganizations(ctx, w.Author, w.From, w.Into)
	case OpGlossaryAdd, OpGlossaryUpdate:
		if w.Glossary == nil {
			res.Err = incidentlib.Errorf(incidentlib.EINVALID, "a %s write carries no glossary entry", w.Op)
			break
		}
		if w.Op == OpGlossaryAdd {
			res.Glossary, res.Err = s.AddGlossaryEntry(ctx, w.Author, *w.Glossary)
		} else {
			res.Glossary, res.Err = s.UpdateGlossaryEntry(ctx, w.Author, w.GlossaryKey, *w.Glossary)
		}
	case OpGlossaryRemove:
		res.Glossary, res.Err = s.RemoveGlossaryEntry(ctx, w.Author, w.GlossaryKey)
	default:
		return false
	}
	return true
}
