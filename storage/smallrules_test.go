package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/incidentlib/incidentlib"
)

// A withdrawal's reason, like every comment, follows the text rules:
// no control character but tab and line breaks.
func TestWithdrawnReasonText(t *testing.T) {
	db := wrOpen(t, true)
	kim := asUser("kim", incidentlib.RoleEditor)
	if _, err := db.Incidents().UpsertIncident(kim, wrIncident("IL-0001", "Acme", "acme", "t"), incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, reason := range map[string]string{"ErrBell": "a dup\x07licate", "ErrEscape": "\x1b[31mred", "ErrBidi": "a \u202edup", "ErrC1": "a \u0085dup"} {
		t.Run(name, func(t *testing.T) {
			seq := db.Incidents().Seq()
			if _, err := db.Incidents().WithdrawIncident(kim, "IL-0001", reason, incidentlib.WriteOptions{}); incidentlib.ErrorCode(err) != incidentlib.EINVALID || db.Incidents().Seq() != seq {
				t.Fatalf("%v, want INVALID and nothing written", err)
			}
		})
	}
	t.Run("LineBreaksAllowed", func(t *testing.T) {
		if _, err := db.Incidents().WithdrawIncident(kim, "IL-0001", "a duplicate\n\tof IL-0002", incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}

// The four-eyes rule compares the content's authors: an editor who
// restores (or writes back) a reviewer's own earlier content after
// another reviewer's approval does not make that content approvable by
// the reviewer who wrote it.
func TestSelfReviewOfRestoredContent(t *testing.T) {
	db := wrOpen(t, true)
	kim := asUser("kim", incidentlib.RoleReviewer)
	lee := asUser("lee", incidentlib.RoleReviewer)
	pat := asUser("pat", incidentlib.RoleEditor)
	if _, err := db.Incidents().UpsertIncident(kim, wrIncident("IL-0001", "Acme", "acme", "kim's words"), incidentlib.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := wrReview(lee, db, "IL-0001", "lee", incidentlib.WriteOptions{}); err != nil { // v2 submit, v3 approve
		t.Fatal(err)
	}
	if _, err := db.Incidents().UpsertIncident(pat, wrIncident("IL-0001", "Acme", "acme", "pat's words"), incidentlib.WriteOptions{}); err != nil { // v4
		t.Fatal(err)
	}
	if _, err := wrReview(lee, db, "IL-0001", "lee", incidentlib.WriteOptions{}); err != nil { // v5, v6
		t.Fatal(err)
	}
	for name, write := range map[string]func() error{
		"ErrRestore": func() error {
			_, err := db.Incidents().RestoreIncident(pat, "IL-0001", 1, "back to the first", incidentlib.WriteOptions{})
			return err
		},
		"ErrWrittenBack": func() error {
			_, err := db.Incidents().UpsertIncident(pat, wrIncident("IL-0001", "Acme", "acme", "kim's words"), incidentlib.WriteOptions{})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			if err := write(); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Incidents().SubmitForReview(pat, "IL-0001", incidentlib.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			seq := db.Incidents().Seq()
			if _, err := db.Incidents().DecideReview(kim, "IL-0001", incidentlib.DecisionApprove, "", incidentlib.WriteOptions{}); incidentlib.ErrorCode(err) != incidentlib.ESELFREVIEW || db.Incidents().Seq() != seq {
				t.Fatalf("kim approved her own content: %v", err)
			}
			// Another reviewer may; then the next case starts from an approval.
			if _, err := db.Incidents().DecideReview(lee, "IL-0001", incidentlib.DecisionApprove, "", incidentlib.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Incidents().UpsertIncident(pat, wrIncident("IL-0001", "Acme", "acme", "pat again "+name), incidentlib.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := wrReview(lee, db, "IL-0001", "lee", incidentlib.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("OtherContentApprovable", func(t *testing.T) {
		if _, err := db.Incidents().UpsertIncident(pat, wrIncident("IL-0001", "Acme", "acme", "new words"), incidentlib.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := wrReview(kim, db, "IL-0001", "kim", incidentlib.WriteOptions{}); err != nil {
			t.Fatalf("kim may approve content she did not write: %v", err)
		}
	})
}

// Token names: the program's own author names are reserved (release was
// not), and names are unique without case (Kim and kim were two
// authors), against revoked tokens too.
func TestTokenNamesOneAuthor(t *testing.T) {
	db := wrOpen(t, true)
	ctx := context.Background()
	create := func(name string) error {
		_, _, err := db.Tokens().CreateToken(ctx, name, incidentlib.RoleEditor, time.Time{})
		return err
	}
	for _, name := range []string{"release", "Release", "seeds", "migration", "import", "admin", "gen"} {
		t.Run("ErrReserved_"+name, func(t *testing.T) {
			if err := create(name); incidentlib.ErrorCode(err) != incidentlib.EINVALID {
				t.Fatalf("%v", err)
			}
		})
	}
	if err := create("kim"); err != nil {
		t.Fatal(err)
	}
	t.Run("ErrCaseTwin", func(t *testing.T) {
		if err := create("Kim"); incidentlib.ErrorCode(err) != incidentlib.ECONFLICT {
			t.Fatalf("%v", err)
		}
	})
	if _, err := db.Tokens().RevokeToken(ctx, "kim"); err != nil {
		t.Fatal(err)
	}
	t.Run("ErrCaseTwinOfRevoked", func(t *testing.T) {
		if err := create("KIM"); incidentlib.ErrorCode(err) != incidentlib.ECONFLICT {
			t.Fatalf("%v", err)
		}
	})
	t.Run("SameNameAgain", func(t *testing.T) {
		if err := create("kim"); err != nil {
			t.Fatal(err)
		}
	})
}
