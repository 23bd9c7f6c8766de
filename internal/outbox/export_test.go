package outbox

import "context"

// SetRecordHook makes f run at the start of each try of w's record
// transaction.
func (w *Worker) SetRecordHook(f func(ctx context.Context)) { w.recordHook = f }
