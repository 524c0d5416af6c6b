package perimeter_test

import (
	"fmt"
	"net/url"

	"crypto/x509"

	"github.com/snowfence/snowfence/perimeter"
)

func ExampleParseCallers() {
	c, err := perimeter.ParseCallers([]byte(`{
		"default": "deny",
		"callers": {
			"spiffe://corp/orders": {"rate": 50000, "burst": 10000},
			"billing.corp":         {"rate": 2000, "burst": 1000}
		}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, id := range []string{"spiffe://corp/orders", "billing.corp", "spiffe://corp/stranger"} {
		p, listed, ok := c.Lookup(id)
		fmt.Printf("%s: allowed=%v listed=%v rate=%g/s burst=%d\n", id, ok, listed, p.Rate, p.Burst)
	}

	_, err = perimeter.ParseCallers([]byte(`{"default": "deny", "callers": {"spiffe://corp/orders": {"rate": 10, "burst": 500}}}`))
	fmt.Println(err)
	// Output:
	// spiffe://corp/orders: allowed=true listed=true rate=50000/s burst=10000
	// billing.corp: allowed=true listed=true rate=2000/s burst=1000
	// spiffe://corp/stranger: allowed=false listed=false rate=0/s burst=0
	// perimeter: invalid callers file: caller "spiffe://corp/orders": "burst" is 500; want a whole number of IDs from 1000 (the largest batch, so a batch can ever be allowed) to 1073741824
}

func ExampleIdentity() {
	spiffe, _ := url.Parse("spiffe://corp/orders")
	relative, _ := url.Parse("billing.corp")
	for _, cert := range []*x509.Certificate{
		{URIs: []*url.URL{spiffe}, DNSNames: []string{"orders.corp"}},
		{DNSNames: []string{"Billing.Corp"}},
		{DNSNames: []string{"spiffe://corp/orders"}}, // not a host name
		{DNSNames: []string{"*.corp"}},               // a wildcard is not one caller
		{URIs: []*url.URL{relative}, DNSNames: []string{"billing.corp"}},
		{},
	} {
		id, ok := perimeter.Identity(cert)
		fmt.Printf("%q %v\n", id, ok)
	}
	// Output:
	// "spiffe://corp/orders" true
	// "billing.corp" true
	// "" false
	// "" false
	// "" false
	// "" false
}
