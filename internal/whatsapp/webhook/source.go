package webhook

import (
	"github.com/bulksend/bulksend/internal/campaign"
	"github.com/bulksend/bulksend/internal/reconcile"
)

// Statuses returns r as the source of statuses that reconcile reads.
func Statuses(r *Reader) reconcile.Source { return source{r} }

type source struct{ r *Reader }

func (s source) Next() (reconcile.Status, error) {
	st, err := s.r.Next()
	return st.reconcile(), err
}

func (s source) Counts() reconcile.SourceCounts {
	c := s.r.Counts()
	return reconcile.SourceCounts{Statuses: c.Statuses, Invalid: c.Invalid, NotStatus: c.NotStatus, FirstInvalid: c.FirstInvalid, Kinds: c.Kinds}
}

// codeMarketingCap is WhatsApp's error code for a message not delivered
// because the recipient had their share of marketing messages.
const codeMarketingCap = 131049

// reconcile is st as reconcile reads it: a failed status names its reason
// when WhatsApp's code has one, and billable is nil when the pricing does
// not say.
func (st Status) reconcile() reconcile.Status {
	rs := reconcile.Status{
		MessageID: st.WAMID, Status: st.Status, Timestamp: st.Timestamp, Ref: ref(st.CallbackData),
		Sender: st.PhoneNumberID, ErrorCode: st.ErrorCode, ErrorTitle: st.ErrorTitle,
		Price: campaign.Pricing{Category: st.Pricing.Category, Type: st.Pricing.Type},
	}
	if st.Pricing.HasBillable {
		b := st.Pricing.Billable
		rs.Price.Billable = &b
	}
	if st.Status == "failed" && st.ErrorCode == codeMarketingCap {
		rs.ErrorReason = campaign.FailMarketingCap
	}
	return rs
}

// ref is the row bulksend attached to the message as its callback data;
// zero for data bulksend did not write.
func ref(callbackData string) campaign.Ref {
	r, _ := campaign.ParseRef(callbackData)
	return r
}
