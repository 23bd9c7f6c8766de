package jwk

import (
	"crypto/ed25519"
	"math/big"
)

// fieldP is the prime of the Ed25519 field, 2^255 - 19.
var fieldP = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(19))

// smallOrderY are the y coordinates of the eight points of small order
// (the torsion subgroup): 0, 1, p-1 and the pair of order-8 values. A key
// at such a point accepts forged signatures: with the neutral point as key,
// one fixed signature verifies for every message. Comparing y, with the
// encoding required canonical, covers every spelling of these points.
var smallOrderY = func() []*big.Int {
	y8, _ := new(big.Int).SetString("05fc536d880238b13933c6d305acdfd5f098eff289f4c345b027b2c28f95e826", 16)
	return []*big.Int{big.NewInt(0), big.NewInt(1), new(big.Int).Sub(fieldP, big.NewInt(1)), y8, new(big.Int).Sub(fieldP, y8)}
}()

// weakPublicKey reports whether pub is not a canonical encoding (y at or
// above p) or is a point of small order. Points that are not on the curve
// are left to ed25519.Verify, which refuses them.
func weakPublicKey(pub ed25519.PublicKey) bool {
	be := make([]byte, len(pub))
	for i, c := range pub {
		be[len(pub)-1-i] = c
	}
	be[0] &= 0x7f // the sign of x
	y := new(big.Int).SetBytes(be)
	if y.Cmp(fieldP) >= 0 {
		return true
	}
	for _, w := range smallOrderY {
		if y.Cmp(w) == 0 {
			return true
		}
	}
	return false
}
