package lease

import (
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/internal/revert"
)

// noticeMono is the monotonic reading (Grant.StartMono) a claim's first
// grant waits for, w after the claim returned at r: a wall clock stepped
// forward (or a host suspend) then cannot cut the notice window short and
// start issuing beside a holder that has not noticed the claim yet.
// Load-bearing for uniqueness: change only with scripts/prove-search jump.
func noticeMono(r snowfence.Reading, w time.Duration) time.Duration {
	if revert.Jump {
		return 0
	}
	return r.Mono + w
}
