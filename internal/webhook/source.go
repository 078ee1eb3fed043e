package webhook

import "github.com/bulksend/bulksend/internal/reconcile"

// Statuses returns r as the source of statuses that reconcile reads.
func Statuses(r *Reader) reconcile.Source { return source{r} }

type source struct{ r *Reader }

func (s source) Next() (reconcile.Status, error) {
	st, err := s.r.Next()
	return reconcile.Status{
		WAMID: st.WAMID, Status: st.Status, Timestamp: st.Timestamp, CallbackData: st.CallbackData,
		Sender: st.PhoneNumberID, ErrorCode: st.ErrorCode, ErrorTitle: st.ErrorTitle,
	}, err
}

func (s source) Counts() reconcile.SourceCounts {
	c := s.r.Counts()
	return reconcile.SourceCounts{Statuses: c.Statuses, Invalid: c.Invalid, NotStatus: c.NotStatus, FirstInvalid: c.FirstInvalid}
}
