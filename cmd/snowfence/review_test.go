package main

import "testing"

// TestReviewDecodeNilUUID: snowfence decode reads a 36-character argument
// as a UUID and only calls FromUUID when the UUID is not the zero one, so
// the Nil UUID skips the check that refuses foreign UUIDs and is decoded
// as ID 0 (exit 0, a made-up decoding). The server's decode refuses it.
func TestReviewDecodeNilUUID(t *testing.T) {
	code, out, errOut := runCLI(t, "decode", "00000000-0000-0000-0000-000000000000")
	if code != 2 || out != "" || errOut == "" {
		t.Errorf("decode of the Nil UUID: exit %d, stdout %q, stderr %q; want exit 2 (not one of ours)", code, out, errOut)
	}
}
