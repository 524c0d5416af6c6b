package conformance

import (
	"encoding/json"
	"os"
	"testing"
)

// The scenarios file (PROTOCOL.md, "scenarios.json").
type scenarios struct {
	Version   int        `json:"version"`
	Scenarios []scenario `json:"scenarios"`
}

type scenario struct {
	Name       string         `json:"name"`
	About      string         `json:"about"`
	Endpoints  []string       `json:"endpoints"`
	TLS        string         `json:"tls"`
	Config     map[string]any `json:"config"`
	Increasing string         `json:"increasing"`
	Steps      []step         `json:"steps"`
}

type step struct {
	Client     map[string]any `json:"client"`
	Open       map[string]any `json:"open"`
	Expect     string         `json:"expect"`
	ExpectIDs  *int           `json:"expect_ids"`
	WithinMS   int            `json:"within_ms"`
	Increasing string         `json:"increasing"`
	CompareCLI bool           `json:"compare_cli"`

	Fault *fault       `json:"fault"`
	Mints *countCheck  `json:"mints"`
	Await *awaitSpec   `json:"await"`
	Stop  *endpointRef `json:"stop"`
	Start *endpointRef `json:"start"`

	Repeat *step      `json:"repeat"`
	Until  *untilSpec `json:"until"`
	Max    int        `json:"max"`

	Why string `json:"why"`
}

type countCheck struct {
	Endpoint int  `json:"endpoint"`
	Exactly  *int `json:"exactly"`
	AtLeast  *int `json:"at_least"`
}

type awaitSpec struct {
	Endpoint int `json:"endpoint"`
	Mints    int `json:"mints"`
	Probes   int `json:"probes"`
	WithinMS int `json:"within_ms"`
}

type endpointRef struct {
	Endpoint int `json:"endpoint"`
}

type untilSpec struct {
	Endpoint        int `json:"endpoint"`
	MintsSinceStart int `json:"mints_since_start"`
}

// loadScenarios reads scenarios.json, refusing fields it does not know:
// a scenario that says more than the driver reads would pass unchecked.
func loadScenarios(t *testing.T) []scenario {
	t.Helper()
	f, err := os.Open("scenarios.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	var s struct {
		scenarios
		About string `json:"about"`
	}
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("scenarios.json: %v", err)
	}
	if s.Version != 1 || len(s.Scenarios) == 0 {
		t.Fatalf("scenarios.json: version %d with %d scenarios; want version 1 and some", s.Version, len(s.Scenarios))
	}
	return s.Scenarios
}
