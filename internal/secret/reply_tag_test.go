package secret

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestReplyTag(t *testing.T) {
	t.Parallel()
	k, _ := DeriveKeys(bytes.Repeat([]byte{1}, 32))
	other, _ := DeriveKeys(bytes.Repeat([]byte{2}, 32))
	id := uuid.New()
	tag := k.ReplyTag(id)
	if len(tag) != 42 || strings.ToLower(tag) != tag {
		t.Fatalf("tag %q", tag)
	}
	if got, ok := k.ReplyInvitation(strings.ToUpper(tag)); !ok || got != id {
		t.Fatal("the tag does not name its invitation (case folded)")
	}
	if _, ok := other.ReplyInvitation(tag); ok {
		t.Fatal("another key accepts the tag")
	}
	forged := k.ReplyTag(uuid.New())
	if _, ok := k.ReplyInvitation(tag[:26] + forged[26:]); ok {
		t.Fatal("a tag with another invitation's MAC is accepted")
	}
	for _, bad := range []string{"", "x", tag + "a", tag[:41]} {
		if _, ok := k.ReplyInvitation(bad); ok {
			t.Fatalf("%q accepted", bad)
		}
	}
}
