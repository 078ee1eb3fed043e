package sms

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Queue reads an SQS queue that an SMS topic's events (or a two-way
// number's inbound messages) are delivered to: `bulksend receive
// --sqs-queue-url`. It is safe for concurrent use.
//
// The SDK's retries are off, as for sends: the poller (smsqueue) waits and
// polls again after a failure, and a delete that failed only means the
// message comes again, which the log keeps harmlessly.
type Queue struct {
	api *sqs.Client
	url string
}

// QueueMessage is a message received: its body as SQS holds it (an SNS
// notification, or with raw delivery the event itself) and the receipt
// handle that deletes it.
type QueueMessage struct {
	ID      string
	Body    string
	Receipt string
}

// sqsHost is an SQS endpoint's host: sqs.<region>.amazonaws.com (.com.cn
// in China).
var sqsHost = regexp.MustCompile(`^sqs\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$`)

// NewQueue returns the queue at queueURL, reached with o's region,
// credentials (the standard chain when nil) and HTTP client. On AWS's
// domain the region is the URL's and the endpoint the SDK's (with
// AWS_ENDPOINT_URL honoured); another host (the sandbox, a VPC endpoint)
// is itself the endpoint, unless o.EndpointURL names one.
func NewQueue(ctx context.Context, queueURL string, o Options) (*Queue, error) {
	u, err := url.Parse(queueURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path == "" || u.Path == "/" {
		return nil, fmt.Errorf("%q is not an SQS queue URL (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME)", queueURL)
	}
	endpoint := o.EndpointURL
	if m := sqsHost.FindStringSubmatch(u.Host); m != nil {
		if o.Region == "" {
			o.Region = m[1]
		}
	} else if endpoint == "" {
		endpoint = u.Scheme + "://" + u.Host
	}
	cfg, err := loadConfig(ctx, o)
	if err != nil {
		return nil, err
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = newHTTPClient(2)
	}
	api := sqs.NewFromConfig(cfg, func(so *sqs.Options) {
		so.Retryer = aws.NopRetryer{}
		so.RetryMaxAttempts = 0 // else AWS_MAX_ATTEMPTS would wrap the retryer
		so.HTTPClient = hc
		so.Credentials = aws.NewCredentialsCache(chain{cfg.Credentials})
		so.ClientLogMode = 0 // never log requests: they carry signatures
		if endpoint != "" {
			so.BaseEndpoint = aws.String(endpoint)
		}
	})
	return &Queue{api: api, url: queueURL}, nil
}

// Receive long-polls the queue: up to 10 messages, waiting up to wait
// seconds (0 to 20) for the first.
func (q *Queue) Receive(ctx context.Context, wait int) ([]QueueMessage, error) {
	out, err := q.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(q.url), MaxNumberOfMessages: 10, WaitTimeSeconds: int32(wait),
	})
	if err != nil {
		return nil, fmt.Errorf("SQS ReceiveMessage: %w", err)
	}
	msgs := make([]QueueMessage, 0, len(out.Messages))
	for _, m := range out.Messages {
		msgs = append(msgs, QueueMessage{ID: aws.ToString(m.MessageId), Body: aws.ToString(m.Body), Receipt: aws.ToString(m.ReceiptHandle)})
	}
	return msgs, nil
}

// Delete deletes the messages whose receipt handles are given (at most
// 10); it returns how many SQS deleted and the error of the rest.
func (q *Queue) Delete(ctx context.Context, receipts []string) (int, error) {
	if len(receipts) == 0 {
		return 0, nil
	}
	entries := make([]types.DeleteMessageBatchRequestEntry, len(receipts))
	for i, h := range receipts {
		entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(h)}
	}
	out, err := q.api.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
	if err != nil {
		return 0, fmt.Errorf("SQS DeleteMessageBatch: %w", err)
	}
	if len(out.Failed) > 0 {
		f := out.Failed[0]
		return len(out.Successful), fmt.Errorf("SQS DeleteMessageBatch: %d not deleted: %s: %s", len(out.Failed), aws.ToString(f.Code), aws.ToString(f.Message))
	}
	return len(out.Successful), nil
}
