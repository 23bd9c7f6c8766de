package translog

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Checkpoint is the body of a C2SP tlog-checkpoint: the origin line, the
// tree size and the root hash. The service writes no extension lines.
type Checkpoint struct {
	Origin string
	Size   int64
	Root   tlog.Hash
}

// Text is the checkpoint's note text: three lines, each ending in a newline.
func (c Checkpoint) Text() string {
	return fmt.Sprintf("%s\n%d\n%s\n", c.Origin, c.Size, base64.StdEncoding.EncodeToString(c.Root[:]))
}

// ErrCheckpoint: a note text that is not a checkpoint.
var ErrCheckpoint = errors.New("not a tlog-checkpoint")

// ParseCheckpoint reads a checkpoint body (a verified note's text). Extension
// lines after the root are allowed and ignored, as C2SP tlog-checkpoint says.
func ParseCheckpoint(text string) (Checkpoint, error) {
	lines := strings.SplitAfter(text, "\n")
	if len(lines) < 4 || lines[len(lines)-1] != "" {
		return Checkpoint{}, fmt.Errorf("%w: want origin, size and root lines, each ending in a newline", ErrCheckpoint)
	}
	origin := strings.TrimSuffix(lines[0], "\n")
	sizeText := strings.TrimSuffix(lines[1], "\n")
	size, err := strconv.ParseInt(sizeText, 10, 64)
	if origin == "" || err != nil || size < 0 || strconv.FormatInt(size, 10) != sizeText {
		return Checkpoint{}, fmt.Errorf("%w: bad origin or size line", ErrCheckpoint)
	}
	root, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(lines[2], "\n"))
	if err != nil || len(root) != tlog.HashSize {
		return Checkpoint{}, fmt.Errorf("%w: bad root hash line", ErrCheckpoint)
	}
	c := Checkpoint{Origin: origin, Size: size}
	copy(c.Root[:], root)
	return c, nil
}

// Signature algorithms of signed-note keys (C2SP signed-note).
const (
	algEd25519     = 0x01
	algCosignature = 0x04
)

// keyHash is the signed-note key ID: the first four bytes of
// SHA-256(name || "\n" || algorithm || public key), big-endian.
func keyHash(name string, alg byte, pub ed25519.PublicKey) uint32 {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{'\n', alg})
	h.Write(pub)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// Signer signs checkpoints with the log's Ed25519 key under the log's name
// (its origin); it implements note.Signer.
type Signer struct {
	name string
	priv ed25519.PrivateKey
}

// NewSigner returns the signer of name with priv.
func NewSigner(name string, priv ed25519.PrivateKey) (*Signer, error) {
	if !validKeyName(name) {
		return nil, fmt.Errorf("translog: %q cannot name a note key", name)
	}
	return &Signer{name: name, priv: priv}, nil
}

// Name implements note.Signer.
func (s *Signer) Name() string { return s.name }

// KeyHash implements note.Signer.
func (s *Signer) KeyHash() uint32 {
	return keyHash(s.name, algEd25519, s.priv.Public().(ed25519.PublicKey))
}

// Sign implements note.Signer.
func (s *Signer) Sign(msg []byte) ([]byte, error) { return ed25519.Sign(s.priv, msg), nil }

// VerifierKey is the log's public key in signed-note form
// (name+hash+base64 of 0x01||key), what /.well-known/consensus-keys and
// the capabilities document publish.
func (s *Signer) VerifierKey() string {
	vkey, err := note.NewEd25519VerifierKey(s.name, s.priv.Public().(ed25519.PublicKey))
	if err != nil {
		panic(err) // the name was checked by NewSigner
	}
	return vkey
}

// Sign signs the checkpoint c with s and returns the signed note.
func (s *Signer) SignCheckpoint(c Checkpoint) ([]byte, error) {
	if c.Origin != s.name {
		return nil, fmt.Errorf("translog: checkpoint origin %q is not the log's name %q", c.Origin, s.name)
	}
	return note.Sign(&note.Note{Text: c.Text()}, s)
}

func validKeyName(name string) bool {
	return name != "" && !strings.ContainsAny(name, "+ \t\n") && strings.ToValidUTF8(name, "") == name
}

// cosigVerifier checks C2SP tlog-cosignature/v1 signatures: an Ed25519
// signature over "cosignature/v1\ntime <t>\n" followed by the checkpoint's
// text, where the signature's first eight bytes are t, big-endian.
type cosigVerifier struct {
	name string
	pub  ed25519.PublicKey
}

func (v cosigVerifier) Name() string    { return v.name }
func (v cosigVerifier) KeyHash() uint32 { return keyHash(v.name, algCosignature, v.pub) }
func (v cosigVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	t := binary.BigEndian.Uint64(sig[:8])
	signed := append([]byte(fmt.Sprintf("cosignature/v1\ntime %d\n", t)), msg...)
	return ed25519.Verify(v.pub, signed, sig[8:])
}

// CosignatureTime returns the time a cosignature line (its base64 part,
// key hash included) states, or an error if it is not one.
func CosignatureTime(sig []byte) (uint64, error) {
	if len(sig) != 4+8+ed25519.SignatureSize {
		return 0, errors.New("not a cosignature/v1 signature")
	}
	return binary.BigEndian.Uint64(sig[4:12]), nil
}

// NewVerifier parses a signed-note verifier key, name+hash+base64(alg||key),
// of an Ed25519 note key (0x01, the log's own) or of a tlog-cosignature/v1
// witness key (0x04).
func NewVerifier(vkey string) (note.Verifier, error) {
	name, rest, ok1 := strings.Cut(vkey, "+")
	hashText, keyText, ok2 := strings.Cut(rest, "+")
	if !ok1 || !ok2 || !validKeyName(name) {
		return nil, fmt.Errorf("translog: malformed verifier key %q", vkey)
	}
	hash, err1 := strconv.ParseUint(hashText, 16, 32)
	key, err2 := base64.StdEncoding.DecodeString(keyText)
	if err1 != nil || err2 != nil || len(hashText) != 8 || len(key) != 1+ed25519.PublicKeySize {
		return nil, fmt.Errorf("translog: malformed verifier key %q", vkey)
	}
	pub := ed25519.PublicKey(key[1:])
	switch key[0] {
	case algEd25519:
		return note.NewVerifier(vkey)
	case algCosignature:
		v := cosigVerifier{name: name, pub: pub}
		if uint32(hash) != v.KeyHash() {
			return nil, fmt.Errorf("translog: verifier key %q: the key hash does not match", vkey)
		}
		return v, nil
	default:
		return nil, fmt.Errorf("translog: verifier key %q: unknown algorithm %#x", vkey, key[0])
	}
}

// CosignatureVerifierKey is the signed-note form of a witness's
// tlog-cosignature/v1 key (algorithm 0x04).
func CosignatureVerifierKey(name string, pub ed25519.PublicKey) string {
	return fmt.Sprintf("%s+%08x+%s", name, keyHash(name, algCosignature, pub),
		base64.StdEncoding.EncodeToString(append([]byte{algCosignature}, pub...)))
}

// WitnessKey reads a witness's key as the command line and the settings
// take it: either a whole verifier key (name+hash+base64) or NAME=KEY with
// KEY the base64 of the 32-byte Ed25519 public key, taken as a
// tlog-cosignature/v1 key.
func WitnessKey(s string) (note.Verifier, error) {
	if name, b64, ok := strings.Cut(s, "="); ok && !strings.Contains(name, "+") {
		pub, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(pub) != ed25519.PublicKeySize || !validKeyName(name) {
			return nil, fmt.Errorf("translog: witness %q: want NAME=base64 of a 32-byte Ed25519 key, or a verifier key", s)
		}
		return cosigVerifier{name: name, pub: pub}, nil
	}
	return NewVerifier(s)
}

// AddSignatureLines appends signature lines (each "— name base64\n") to a
// signed note, skipping any line the note already holds.
func AddSignatureLines(signed []byte, lines ...string) []byte {
	out := append([]byte(nil), signed...)
	for _, l := range lines {
		if !strings.HasSuffix(l, "\n") {
			l += "\n"
		}
		if !bytes.Contains(out, []byte(l)) {
			out = append(out, l...)
		}
	}
	return out
}
