package main

// The suite's side of TLS: it trusts only the cluster's CA, presents the
// user certificate `amulet cert create-client` made, and requires the
// nodes' certificates to name amulet-node (docs/security.md).

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// ClientCredentials are what every connection to a node uses: plain TCP
// until a cluster with TLS sets them.
var ClientCredentials credentials.TransportCredentials = insecure.NewCredentials()

func tlsCredentials(dir, user string) (credentials.TransportCredentials, error) {
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%s holds no certificate", filepath.Join(dir, "ca.pem"))
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, user+".pem"), filepath.Join(dir, user+".key"))
	if err != nil {
		return nil, err
	}
	return credentials.NewTLS(&tls.Config{
		RootCAs:      pool,
		Certificates: []tls.Certificate{pair},
		ServerName:   "amulet-node",
		MinVersion:   tls.VersionTLS12,
	}), nil
}
