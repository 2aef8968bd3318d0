package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certValidity is long enough for any sandbox; certificates are made anew
// on every start.
const certValidity = 365 * 24 * time.Hour

// authority is a throwaway certificate authority: it signs the API
// server's serving certificate and every client certificate, so one file
// serves as both --client-ca-file and the kubeconfig's CA.
type authority struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
}

func newAuthority(name string) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	if tmpl.SerialNumber, err = serial(); err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	return &authority{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// issue signs a certificate for a client (user and groups, as the API
// server reads them from CN and O) or, with hosts, a server.
func (a *authority) issue(user string, groups []string, hosts ...string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("key for %s: %w", user, err)
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		NotBefore:   time.Now().Add(-time.Hour),
		NotAfter:    time.Now().Add(certValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if len(hosts) > 0 {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
	}
	if tmpl.SerialNumber, err = serial(); err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, key.Public(), a.key)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate for %s: %w", user, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("key for %s: %w", user, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

func serial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	return n, nil
}

// pkiFiles are the files the API server is started with.
type pkiFiles struct {
	ca, servingCert, servingKey, saKey string
}

// writePKI makes a fresh authority, a serving certificate for the loopback
// address and a service-account signing key in dir.
func writePKI(dir string) (*authority, pkiFiles, error) {
	f := pkiFiles{
		ca:          filepath.Join(dir, "ca.crt"),
		servingCert: filepath.Join(dir, "apiserver.crt"),
		servingKey:  filepath.Join(dir, "apiserver.key"),
		saKey:       filepath.Join(dir, "sa.key"),
	}
	ca, err := newAuthority("stratus-local-ca")
	if err != nil {
		return nil, f, err
	}
	crt, key, err := ca.issue("kube-apiserver", nil, "127.0.0.1", "localhost")
	if err != nil {
		return nil, f, err
	}
	// Service-account tokens are signed with RS256, which every client
	// verifies.
	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, f, fmt.Errorf("service account key: %w", err)
	}
	saDER, err := x509.MarshalPKCS8PrivateKey(sa)
	if err != nil {
		return nil, f, fmt.Errorf("service account key: %w", err)
	}
	for path, data := range map[string][]byte{
		f.ca: ca.certPEM, f.servingCert: crt, f.servingKey: key,
		f.saKey: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: saDER}),
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, f, fmt.Errorf("write %s: %w", path, err)
		}
	}
	return ca, f, nil
}
