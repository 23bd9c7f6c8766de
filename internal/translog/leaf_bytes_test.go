package translog

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/consensus-md/consensus/internal/canon"
)

// TestLeafBytesAreCanonical: the direct writer and the general
// canonicalizer give the same bytes, for leaves of every kind and for
// strings and numbers at and past what the direct writer takes.
func TestLeafBytesAreCanonical(t *testing.T) {
	t.Parallel()
	pick := func(r *rand.Rand, xs ...string) string { return xs[r.IntN(len(xs))] }
	strs := []string{"", "a", "79216c6d-9966-4749-9334-aec5029630ac", "2026-12-06T00:30:13.225385Z", `q"uote`, `back\slash`,
		"tab\there", "\x7f", "é", "\u2028", "~ !#$%&'()*+,-./0123456789:;<=>?@[]^_`{|}", "\U0001F600"}
	ints := []int64{0, 1, -1, 255, 1 << 53, 1<<53 + 1, -(1 << 53) - 1, 1 << 62}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5000; i++ {
		l := Leaf{Type: pick(r, LeafType, pick(r, strs...)), AgreementID: pick(r, strs...), Kind: pick(r, KindRevision, KindHead, KindRecord, pick(r, strs...)),
			Revision: int(ints[r.IntN(len(ints))]), At: pick(r, strs...)}
		if r.IntN(2) == 0 {
			s := ints[r.IntN(len(ints))]
			l.Seq = &s
		}
		if r.IntN(2) == 0 {
			s := pick(r, strs...)
			l.ChainHead = &s
		}
		if r.IntN(2) == 0 {
			s := pick(r, strs...)
			l.Digest = &s
		}
		want, err := canon.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		got, err := l.Bytes()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("leaf %+v:\n got  %s (%v)\n want %s", l, got, err, want)
		}
	}
}

func BenchmarkLeafBytes(b *testing.B) {
	seq, head, digest := int64(12), "db02af495073042a96582944c64fa24595f28ae45085cfc84277acce0d63d3bf", "429055ca781365c64a479fc18f672892140c9eefd86eb427c68046e10aa4bd3d"
	l := Leaf{Type: LeafType, AgreementID: "79216c6d-9966-4749-9334-aec5029630ac", Kind: KindRecord, Revision: 1, Seq: &seq, ChainHead: &head, Digest: &digest, At: "2026-12-06T00:30:13.225385Z"}
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			_, _ = l.Bytes()
		}
	})
	b.Run("canon", func(b *testing.B) {
		for b.Loop() {
			_, _ = canon.Marshal(l)
		}
	})
}
