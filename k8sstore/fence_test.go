package k8sstore

import (
	"encoding/json"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/snowfence/snowfence/internal/revert"
)

// TestWriteOpsTestFirst: a write's JSON patch tests the resourceVersion
// and the exact record string read before it replaces anything (under
// snowfence_revert_k8srecord, the resourceVersion alone).
func TestWriteOpsTestFirst(t *testing.T) {
	read := object{exists: true, rec: record{Holder: "a", Epoch: 3, MarkMs: 100, Claim: "c1", Renewal: "r1"},
		raw: `{"holder":"a","epoch":3,"mark_ms":100,"claim":"c1","renewal":"r1"}`, rvText: "4711"}
	rec := read.rec
	rec.MarkMs, rec.Renewal = 200, "r2"
	b, err := json.Marshal(writeOps(read, rec, spec(rec, 150, 0)))
	if err != nil {
		t.Fatal(err)
	}
	var ops []map[string]any
	if err := json.Unmarshal(b, &ops); err != nil {
		t.Fatal(err)
	}
	want := []struct{ op, path, value string }{
		{"test", "/metadata/resourceVersion", "4711"},
		{"test", "/metadata/annotations/snowfence.io~1record", read.raw},
		{"replace", "/metadata/annotations/snowfence.io~1record", encode(rec)},
		{"replace", "/spec", ""},
	}
	if revert.K8sRecord {
		want = append(want[:1], want[2:]...)
	}
	if len(ops) != len(want) {
		t.Fatalf("patch %s: %d operations, want %d", b, len(ops), len(want))
	}
	for i, w := range want {
		if ops[i]["op"] != w.op || ops[i]["path"] != w.path {
			t.Errorf("operation %d = %v %v, want %s %s", i, ops[i]["op"], ops[i]["path"], w.op, w.path)
		}
		if w.value != "" && ops[i]["value"] != w.value {
			t.Errorf("operation %d value = %v, want %q", i, ops[i]["value"], w.value)
		}
	}
	sp, _ := ops[len(ops)-1]["value"].(map[string]any)
	if sp["holderIdentity"] != "a" || sp["leaseTransitions"] != float64(3) || sp["leaseDurationSeconds"] != float64(1) {
		t.Errorf("spec %v: want holderIdentity a, leaseTransitions 3, leaseDurationSeconds 1", sp)
	}
}

// TestEscapePointer: RFC 6901's escapes, "~" before "/".
func TestEscapePointer(t *testing.T) {
	for in, want := range map[string]string{"snowfence.io/record": "snowfence.io~1record", "a~b/c": "a~0b~1c", "~1": "~01"} {
		if got := escapePointer(in); got != want {
			t.Errorf("escapePointer(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMetaSign: each sign an object's metadata can show, and what is none.
func TestMetaSign(t *testing.T) {
	m := func(uid string, rv uint64) objMeta { return objMeta{uid: uid, rv: rv} }
	for _, c := range []struct {
		name        string
		before, now objMeta
		sign        bool
	}{
		{"resourceVersion fell", m("u", 50), m("u", 40), true},
		{"made anew", m("u", 50), m("v", 60), true},
		{"made anew, lower", m("u", 50), m("v", 10), true},
		{"first look", objMeta{}, m("u", 40), false},
		{"a write", m("u", 50), m("u", 51), false},
		{"same", m("u", 50), m("u", 50), false},
		{"not a number before", m("u", 0), m("u", 40), false},
		{"not a number now", m("u", 50), m("u", 0), false},
	} {
		got := metaSign("the object", c.before, c.now)
		if want := c.sign && !revert.Restore; (got != "") != want {
			t.Errorf("%s: %v then %v: metaSign = %q, want a sign: %v", c.name, c.before, c.now, got, want)
		}
	}
}

// TestDefinite: the answers after which a write certainly did not commit.
func TestDefinite(t *testing.T) {
	gr := schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"test failed (422)", apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("x"), "", "test")}), true},
		{"conflict", apierrors.NewConflict(gr, "x", errors.New("modified")), true},
		{"exists", apierrors.NewAlreadyExists(gr, "x"), true},
		{"not found", apierrors.NewNotFound(gr, "x"), true},
		{"forbidden", apierrors.NewForbidden(gr, "x", errors.New("no")), true},
		{"timeout", apierrors.NewTimeoutError("slow", 1), false},
		{"server error", apierrors.NewInternalError(errors.New("etcd")), false},
		{"too many requests", apierrors.NewTooManyRequests("busy", 1), false},
	} {
		if got := definite(c.err); got != c.want {
			t.Errorf("%s: definite = %v, want %v", c.name, got, c.want)
		}
	}
}
