package api

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

// v7 is the UUIDv7 of millisecond ms whose other bits are all fill
// (0x00: the least of that millisecond, 0xff: the greatest), with the
// version and variant bits set as uuid.NewV7 sets them.
func v7(ms int64, fill byte) string {
	var u uuid.UUID
	for i := range u {
		u[i] = fill
	}
	for i := range 6 {
		u[i] = byte(ms >> (40 - 8*i))
	}
	u[6] = 0x70 | u[6]&0x0f
	u[8] = 0x80 | u[8]&0x3f
	return u.String()
}

// IDFloor and idBefore bracket a millisecond's UUIDv7s: every ID made in
// it sorts at or above IDFloor and above idBefore; every ID of the
// millisecond before sorts below IDFloor and at or below idBefore.
func TestIDBounds(t *testing.T) {
	at := time.Date(2026, 12, 6, 5, 30, 0, 123_456_789, time.UTC)
	ms := at.UnixMilli()
	prevMax, least, most := v7(ms-1, 0xff), v7(ms, 0x00), v7(ms, 0xff)
	if floor := IDFloor(at); !(prevMax < floor && floor <= least && floor <= most) {
		t.Errorf("IDFloor = %s; want above %s and at most %s", floor, prevMax, least)
	}
	if before := idBefore(at); !(prevMax <= before && before < least) {
		t.Errorf("idBefore = %s; want at least %s and below %s", before, prevMax, least)
	}
	if IDFloor(at) != IDFloor(at.Truncate(time.Millisecond)) || IDFloor(at) == IDFloor(at.Add(time.Millisecond)) {
		t.Error("IDFloor does not follow the millisecond")
	}
	if IDFloor(time.Unix(-5, 0)) != v7(0, 0) || idBefore(time.Unix(0, 0)) != "" {
		t.Error("times before the epoch")
	}
}
