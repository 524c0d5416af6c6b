package publicid_test

import (
	"errors"
	"fmt"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/publicid"
)

func Example() {
	ks, err := publicid.ParseKeyset([]byte(`{"keys": {
		"2": {"status": "primary", "key": "8d2b4f6a1c0e3957b8a6d4c2e0f19b7a"},
		"1": {"status": "decrypt-only", "key": "000102030405060708090a0b0c0d0e0f"}}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	id := snowfence.MustParseID("97301141913751557")
	pid, _ := ks.Seal("order", id)
	fmt.Println(pid)

	o, err := ks.Open(pid)
	fmt.Println(o.Prefix, o.ID, o.KeyVersion, err)

	_, err = ks.Open("order_2" + "0000000000000000000000000a")
	fmt.Println(errors.Is(err, publicid.ErrForged))
	fmt.Println(ks)
	// Output:
	// order_25peqp0shbffmh4asf3fn5nb6zt
	// order 97301141913751557 2 <nil>
	// true
	// publicid.Keyset{1:decrypt-only 2:primary key:[redacted]}
}

func ExampleParseRandom() {
	r, err := publicid.ParseRandom("order_01h455vb4pex5vsknk084sn02q")
	fmt.Println(r.Prefix(), err)
	fmt.Printf("%x\n", r.Bits())
	_, err = publicid.ParseRandom("order_01H455VB4PEX5VSKNK084SN02Q")
	fmt.Println(errors.Is(err, publicid.ErrInvalid))
	// Output:
	// order <nil>
	// 01890a5dac96774bbcceb302099a8057
	// true
}
