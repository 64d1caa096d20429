package httpapi

import (
	"testing"
	"time"
)

// BenchmarkCacheSince is one stream's catch-up after a commit: a full
// cache, the stream one event behind.
func BenchmarkCacheSince(b *testing.B) {
	c := feedCache{primed: true}
	for i := range cacheSize {
		c.events = append(c.events, Event{ID: int64(i + 1), Entry: Entry{SessionID: "s"}})
	}
	c.last = cacheSize
	for b.Loop() {
		if evs, ok := c.since(cacheSize-1, "s"); !ok || len(evs) != 1 {
			b.Fatalf("%d events, cached %v", len(evs), ok)
		}
	}
}

// BenchmarkBroadcastNoStreams is a text chunk of a turn nobody watches.
func BenchmarkBroadcastNoStreams(b *testing.B) {
	srv := &Server{opts: Options{Now: time.Now}, subs: map[*subscriber]struct{}{}}
	for b.Loop() {
		srv.broadcast("s", "message.delta", map[string]string{"text": "a few words of a reply"})
	}
}
