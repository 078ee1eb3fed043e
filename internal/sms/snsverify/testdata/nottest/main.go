// Command nottest calls snsverify.Trust from a binary that is not a test:
// TestTrustRefusedOutsideTests builds and runs it, and it must be refused.
package main

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/bulksend/bulksend/internal/sms/snsverify"
)

func main() {
	v := snsverify.New(snsverify.Options{})
	err := snsverify.Trust(v, "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-test.pem", &x509.Certificate{})
	fmt.Println(err)
	if !errors.Is(err, snsverify.ErrNotTest) {
		os.Exit(1)
	}
}
