package lease

// The operator's quarantine of a machine number in a lease table (the
// PostgreSQL and DynamoDB stores) sets the number's holder to
// QuarantineHolder and its lease expiry to QuarantineExpiryMs, and adds one
// to its epoch: no claimer's clock passes that expiry, no holder may take
// that name, and the holder before it fails its next renewal on the new
// epoch. The stores' Quarantine writes the same, so a row quarantined by
// hand and one quarantined through the store look alike.
const (
	// QuarantineHolder is the holder name of a quarantined row. No claim
	// may use it (ClaimRequest.Check).
	QuarantineHolder = "QUARANTINED"
	// QuarantineExpiryMs is the lease expiry of a quarantined row:
	// 2100-01-01T00:00:00Z in Unix ms.
	QuarantineExpiryMs int64 = 4102444800000
)
