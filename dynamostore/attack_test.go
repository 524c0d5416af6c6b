package dynamostore_test

// Adversarial review of the fixes for issue 10 (see lease/attack_test.go):
// a test that still finds a problem is skipped with the finding's number;
// SNOWFENCE_ATTACK=1 runs it.

import (
	"errors"
	"os"
	"testing"

	"github.com/snowfence/snowfence/lease"
)

// Finding 3. SetFleetSchedule on DynamoDB writes the text it is given as
// it is: neither parsed nor made canonical, unlike etcdstore and pgstore,
// which refuse an unparsable schedule with ErrInvalid and store the
// canonical form. Every claim compares the claimer's canonical text with
// the stored bytes, so a schedule written in another spelling of the same
// instant (+00:00 for Z) refuses every claim of every holder, including
// the ones given exactly that --schedule (it is canonicalised before the
// claim); an unparsable one ("v3") refuses every claim and, through
// CheckExtension, every extension: the whole fleet stops.
func TestAttackDynamoFleetScheduleNotCanonical(t *testing.T) {
	if os.Getenv("SNOWFENCE_ATTACK") != "1" {
		t.Skip("finding 3: dynamostore.SetFleetSchedule stores unparsed, non-canonical text; see report (SNOWFENCE_ATTACK=1 runs it)")
	}
	s := newStore(t)
	const spelled = "v1,v2@2036-01-01T00:00:00+00:00"
	canon, err := lease.CanonicalSchedule(spelled)
	if err != nil {
		t.Fatal(err)
	}
	set, err := s.SetFleetSchedule(ctxFor(t), 0, spelled)
	if err != nil {
		t.Fatalf("SetFleetSchedule(%q): %v", spelled, err)
	}
	if set.Text != canon {
		t.Errorf("SetFleetSchedule(%q) stored %q, want the canonical %q (etcdstore and pgstore store it)", spelled, set.Text, canon)
	}
	r := req("a", 0, 511, baseMs())
	r.Schedule = canon
	if _, err := s.Claim(ctxFor(t), r); err != nil {
		t.Errorf("claim with the fleet's schedule %q (canonical form of the one set): %v", canon, err)
	}
	s2 := newStore(t)
	if _, err := s2.SetFleetSchedule(ctxFor(t), 0, "v3"); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("SetFleetSchedule(\"v3\"): %v, want ErrInvalid (it does not parse; every claim and extension would be refused)", err)
	}
}
