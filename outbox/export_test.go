package outbox

// SetStatementBytes lets tests split an InsertTx call into small statements.
func SetStatementBytes(w *Writer, n int) { w.statementBytes = n }
