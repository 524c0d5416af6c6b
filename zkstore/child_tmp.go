package zkstore

// childPath is the claim child of number n's claim nonce claim (TEMPORARY until zk2's claim-child commit is merged).
func (s *Store) childPath(n int, claim string) string { return s.path(n) + "/c-" + claim }
