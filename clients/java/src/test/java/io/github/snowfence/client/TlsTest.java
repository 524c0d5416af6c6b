package io.github.snowfence.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.http.HttpClient;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Mutual TLS from PEM files (src/test/resources/pki, made by its make.sh):
 * a server that requires a client certificate issues to a client that has
 * one, in PKCS#8 or SEC1, and to no other.
 */
@Timeout(60)
class TlsTest {
    static Path pki(String name) {
        return SettingsTest.pki(name);
    }

    /** The server's context: its certificate and key, trusting the test CA for client certificates. */
    static SSLContext serverContext() throws Exception {
        CertificateFactory cf = CertificateFactory.getInstance("X.509");
        Certificate cert, ca;
        try (var in = java.nio.file.Files.newInputStream(pki("server.pem"))) {
            cert = cf.generateCertificate(in);
        }
        try (var in = java.nio.file.Files.newInputStream(pki("ca.pem"))) {
            ca = cf.generateCertificate(in);
        }
        PrivateKey key = Pem.privateKey(pki("server-key.pem"));
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        ks.setKeyEntry("server", key, new char[0], new Certificate[] {cert});
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(ks, new char[0]);
        KeyStore ts = KeyStore.getInstance("PKCS12");
        ts.load(null, null);
        ts.setCertificateEntry("ca", ca);
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(ts);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(kmf.getKeyManagers(), tmf.getTrustManagers(), null);
        return ctx;
    }

    static FakeServer mtlsServer() throws Exception {
        return new FakeServer(new AtomicLong(), serverContext(), true);
    }

    private static SnowfenceClient.Builder builder(FakeServer s) {
        return SnowfenceClient.builder().endpoints(s.url).logger(QuietLogger.INSTANCE).maxAttempts(2)
                .baseBackoff(Duration.ofMillis(1)).maxBackoff(Duration.ofMillis(2));
    }

    @Test
    void clientCertificatePkcs8() throws Exception {
        try (FakeServer s = mtlsServer(); SnowfenceClient c = builder(s).tls(pki("ca.pem"), pki("client.pem"), pki("client-key.pem"))
                .build()) {
            for (int i = 1; i <= 100; i++) {
                assertEquals(i, c.next());
            }
        }
    }

    @Test
    void clientCertificateSec1() throws Exception {
        try (FakeServer s = mtlsServer(); SnowfenceClient c = builder(s).tls(pki("ca.pem"), pki("client.pem"),
                pki("client-key-sec1.pem")).build()) {
            assertEquals(1, c.next());
        }
    }

    @Test
    void sec1AndPkcs8AreTheSameKey() throws Exception {
        var a = (java.security.interfaces.ECPrivateKey) Pem.privateKey(pki("client-key.pem"));
        var b = (java.security.interfaces.ECPrivateKey) Pem.privateKey(pki("client-key-sec1.pem"));
        assertEquals(a.getS(), b.getS());
        assertEquals(a.getParams().getCurve(), b.getParams().getCurve());
    }

    /** A server that requires a client certificate refuses a client that has none: unavailable, no IDs. */
    @Test
    void withoutClientCertificate() throws Exception {
        try (FakeServer s = mtlsServer(); SnowfenceClient c = builder(s).tls(pki("ca.pem"), null, null).build()) {
            UnavailableException e = assertThrows(UnavailableException.class, c::next);
            assertInstanceOf(IOException.class, e.getCause());
            assertEquals(0, c.stats().received());
        }
    }

    /** A server whose certificate the CA file does not vouch for is refused. */
    @Test
    void untrustedServer() throws Exception {
        try (FakeServer s = mtlsServer(); SnowfenceClient c = builder(s).tls(pki("client.pem"), pki("client.pem"),
                pki("client-key.pem")).build()) {
            assertThrows(UnavailableException.class, c::next);
            assertEquals(0, s.mints());
        }
    }

    /** The host name is checked: the certificate names 127.0.0.1 and localhost, not 127.0.0.2. */
    @Test
    void hostNameChecked() throws Exception {
        try (FakeServer s = mtlsServer(); SnowfenceClient c = SnowfenceClient.builder().endpoints(s.url.replace("127.0.0.1", "localhost"))
                .logger(QuietLogger.INSTANCE).tls(pki("ca.pem"), pki("client.pem"), pki("client-key.pem")).build()) {
            // An ID at all is the handshake's success. Not necessarily 1: on
            // a loaded machine a first request can time out and be retried,
            // and the server then minted the first IDs for a lost answer (a
            // scripts/test run got 9).
            assertTrue(c.next() >= 1);
        }
        // A server on 127.0.0.2 with the same certificate: the address is not in it.
        try (FakeServer s = new FakeServer("127.0.0.2", new AtomicLong(), serverContext(), true);
                SnowfenceClient c = builder(s).tls(pki("ca.pem"), pki("client.pem"), pki("client-key.pem")).build()) {
            UnavailableException e = assertThrows(UnavailableException.class, c::next);
            assertEquals(0, s.mints());
            assertTrue(String.valueOf(e.getCause()).contains("127.0.0.2"), String.valueOf(e.getCause()));
        }
    }

    /** The caller's own HttpClient, with its own TLS. */
    @Test
    void callersHttpClient() throws Exception {
        SSLContext ctx = Pem.sslContext(pki("ca.pem"), pki("client.pem"), pki("client-key.pem"));
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).sslContext(ctx).build();
        try (FakeServer s = mtlsServer(); SnowfenceClient c = builder(s).httpClient(http).build()) {
            for (int i = 1; i <= 20; i++) {
                assertEquals(i, c.next());
            }
        }
    }
}
