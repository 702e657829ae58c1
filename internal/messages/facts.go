package messages

// Facts is everything one message says, family by family; a family the message is not of
// is left empty.
type Facts struct {
	MissingKinds         []MissingKind
	Webhook              *WebhookFailure
	Quota                *QuotaExceeded
	TerminatingNamespace string
	Conflict             *ApplyConflict
	Ownership            *Ownership
	Immutable            *Immutable
	WaitTimeout          *WaitTimeout
}

// Parse runs every family's parser over one message.
func Parse(msg string) Facts {
	f := Facts{MissingKinds: ParseMissingKind(msg)}
	if w, ok := ParseWebhook(msg); ok {
		f.Webhook = &w
	}
	if q, ok := ParseQuota(msg); ok {
		f.Quota = &q
	}
	f.TerminatingNamespace, _ = TerminatingNamespace(msg)
	if c, ok := ParseApplyConflict(msg); ok {
		f.Conflict = &c
	}
	if o, ok := ParseOwnership(msg); ok {
		f.Ownership = &o
	}
	if i, ok := ParseImmutable(msg); ok {
		f.Immutable = &i
	}
	if w, ok := ParseWaitTimeout(msg); ok {
		f.WaitTimeout = &w
	}
	return f
}

// Empty says the message is of no family this package reads.
func (f Facts) Empty() bool {
	return len(f.MissingKinds) == 0 && f.Webhook == nil && f.Quota == nil && f.TerminatingNamespace == "" &&
		f.Conflict == nil && f.Ownership == nil && f.Immutable == nil && f.WaitTimeout == nil
}
