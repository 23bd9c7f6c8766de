package batch

// LargestBatch is the most appends b has run in one transaction.
func LargestBatch(b *Batcher) int {
	b.apx.mu.Lock()
	defer b.apx.mu.Unlock()
	return b.apx.largest
}

// AloneRuns is how many appends b's batches have sent to run alone;
// QueuedAppends how many appends wait for a batch.
func AloneRuns(b *Batcher) int {
	b.apx.mu.Lock()
	defer b.apx.mu.Unlock()
	return b.apx.aloneRuns
}

func QueuedAppends(b *Batcher) int {
	b.apx.mu.Lock()
	defer b.apx.mu.Unlock()
	return len(b.apx.queue)
}

// QueuedLookups is how many token lookups wait for b's lookup worker;
// LargestLookup the most one statement has carried.
func QueuedLookups(b *Batcher) int {
	b.look.mu.Lock()
	defer b.look.mu.Unlock()
	return len(b.look.queue)
}

// TakenLookups is how many lookups b's workers have taken.
func TakenLookups(b *Batcher) int {
	b.look.mu.Lock()
	defer b.look.mu.Unlock()
	return b.look.taken
}

// LookupWorkers is how many lookup statements run at once.
const LookupWorkers = lookupWorkers

func LargestLookup(b *Batcher) int {
	b.look.mu.Lock()
	defer b.look.mu.Unlock()
	return b.look.largest
}
