package translog

import (
	"errors"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

const (
	hexA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	hexB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	at   = "2026-01-02T03:04:05.000Z"
	agID = "0190f3a4-1111-7000-8000-000000000001"
)

func recordLeaf() Leaf {
	return Leaf{Type: LeafType, AgreementID: agID, Kind: KindRecord, Revision: 2, Seq: ptr[int64](7),
		ChainHead: ptr(hexA), Digest: ptr(hexB), At: at}
}

func TestLeafBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		leaf Leaf
		want string
	}{
		{"revision", Leaf{Type: LeafType, AgreementID: agID, Kind: KindRevision, Revision: 1, Digest: ptr(hexA), At: at},
			`{"agreementId":"` + agID + `","at":"` + at + `","chainHead":null,"digest":"` + hexA + `","kind":"revision","revision":1,"seq":null,"type":"consensus-log-leaf/v1"}`},
		{"head", Leaf{Type: LeafType, AgreementID: agID, Kind: KindHead, Revision: 1, Seq: ptr[int64](3), ChainHead: ptr(hexB), At: at},
			`{"agreementId":"` + agID + `","at":"` + at + `","chainHead":"` + hexB + `","digest":null,"kind":"head","revision":1,"seq":3,"type":"consensus-log-leaf/v1"}`},
		{"record", recordLeaf(),
			`{"agreementId":"` + agID + `","at":"` + at + `","chainHead":"` + hexA + `","digest":"` + hexB + `","kind":"record","revision":2,"seq":7,"type":"consensus-log-leaf/v1"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.leaf.Bytes()
			if err != nil || string(b) != tc.want {
				t.Fatalf("Bytes() = %s, %v\nwant %s", b, err, tc.want)
			}
			got, err := ParseLeaf(b)
			if err != nil {
				t.Fatalf("ParseLeaf of its own bytes: %v", err)
			}
			again, _ := got.Bytes()
			if string(again) != tc.want {
				t.Fatalf("round trip changed the leaf: %s", again)
			}
		})
	}
}

func TestParseLeafRefuses(t *testing.T) {
	t.Parallel()
	good, _ := recordLeaf().Bytes()
	s := string(good)
	for _, tc := range []struct{ name, in string }{
		{"empty", ``},
		{"not json", `leaf`},
		{"array", `[]`},
		{"whitespace", strings.Replace(s, `,"at"`, `, "at"`, 1)},
		{"members out of order", `{"at":"` + at + `",` + strings.Replace(s[1:], `"at":"`+at+`",`, "", 1)},
		{"case-folded member", strings.Replace(s, `"agreementId"`, `"agreementID"`, 1)},
		{"case-folded type member", strings.Replace(s, `"type"`, `"Type"`, 1)},
		{"duplicate member", strings.Replace(s, `"at":"`+at+`"`, `"at":"`+at+`","at":"`+at+`"`, 1)},
		{"duplicate member, other value", strings.Replace(s, `"kind":"record"`, `"kind":"head","kind":"record"`, 1)},
		{"unknown member", strings.Replace(s, `"type"`, `"note":"x","type"`, 1)},
		{"missing member", strings.Replace(s, `"at":"`+at+`",`, "", 1)},
		{"missing null member", strings.Replace(strings.Replace(s, `"digest":"`+hexB+`",`, "", 1), `"kind":"record"`, `"kind":"head"`, 1)},
		{"trailing data", s + `{}`},
		{"trailing newline", s + "\n"},
		{"other type", strings.Replace(s, "consensus-log-leaf/v1", "consensus-log-leaf/v2", 1)},
		{"unknown kind", strings.Replace(s, `"kind":"record"`, `"kind":"deleted"`, 1)},
		{"revision 0", strings.Replace(s, `"revision":2`, `"revision":0`, 1)},
		{"revision as string", strings.Replace(s, `"revision":2`, `"revision":"2"`, 1)},
		{"seq as float", strings.Replace(s, `"seq":7`, `"seq":7.0`, 1)},
		{"uppercase hex", strings.Replace(s, hexA, strings.ToUpper(hexA), 1)},
		{"short digest", strings.Replace(s, hexB, hexB[:62], 1)},
		{"prefixed digest", strings.Replace(s, `"`+hexB+`"`, `"sha256:`+hexB+`"`, 1)},
		{"record without digest", strings.Replace(s, `"`+hexB+`"`, `null`, 1)},
		{"head with digest", strings.Replace(s, `"kind":"record"`, `"kind":"head"`, 1)},
		{"revision with seq", strings.Replace(strings.Replace(s, `"kind":"record"`, `"kind":"revision"`, 1), `"chainHead":"`+hexA+`"`, `"chainHead":null`, 1)},
		{"escaped member name", strings.Replace(s, `"at"`, `"\u0061t"`, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseLeaf([]byte(tc.in)); !errors.Is(err, ErrLeaf) {
				t.Fatalf("ParseLeaf(%s) = %v, want ErrLeaf", tc.in, err)
			}
		})
	}
}

func TestLeafHashIsRFC6962(t *testing.T) {
	t.Parallel()
	l := recordLeaf()
	b, _ := l.Bytes()
	h, err := l.Hash()
	if err != nil {
		t.Fatal(err)
	}
	if want := sha256Hex(append([]byte{0}, b...)); h.String() == "" || hexOf(h[:]) != want {
		t.Fatalf("Hash() = %x, want SHA-256(0x00 || bytes) = %s", h[:], want)
	}
}
