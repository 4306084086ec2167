package realtime

import (
	"errors"
	"testing"
)

// FuzzDecodeFrame: any bytes decode to a valid frame or a frameError,
// never a panic.
func FuzzDecodeFrame(f *testing.F) {
	for _, s := range []string{
		`{"op":"subscribe","ref":{"type":"cart","id":"c1"},"observables":["count"],"token":"k.a.b","since":3}`,
		`{"op":"unsubscribe","ref":{"type":"cart","id":"c1"}}`,
		`{"op":"subscribe","ref":{"type":"cart","id":"c1"},"token":"t","since":-1}`,
		`{"op":1}`, `[]`, `null`, `{"op":"subscribe"} {}`, "\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := decodeFrame(data)
		if err != nil {
			var fe *frameError
			if !errors.As(err, &fe) || fe.code == "" || fe.msg == "" {
				t.Fatalf("decode error %v is not a frameError with a code and message", err)
			}
			return
		}
		if (fr.Op != OpSubscribe && fr.Op != OpUnsubscribe) || fr.Ref.Type == "" || fr.Ref.ID == "" {
			t.Fatalf("accepted an invalid frame %+v", fr)
		}
		if fr.Op == OpSubscribe && fr.Token == "" {
			t.Fatalf("accepted a subscribe without a token: %+v", fr)
		}
	})
}
