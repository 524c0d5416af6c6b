package io.github.snowfence.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.net.http.HttpClient;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/** Configurations refused at build (the Go client's TestConfigErrors), and the defaults. */
class SettingsTest {
    private static final String EP = "http://127.0.0.1:1";

    private static void refused(String name, Consumer<SnowfenceClient.Builder> cfg) {
        SnowfenceClient.Builder b = SnowfenceClient.builder();
        cfg.accept(b);
        assertThrows(InvalidConfigException.class, b::build, name);
    }

    @Test
    void refusedConfigurations() throws Exception {
        refused("no endpoints", b -> { });
        refused("empty endpoints", b -> b.endpoints());
        refused("relative endpoint", b -> b.endpoints("ids.example"));
        refused("other scheme", b -> b.endpoints("ftp://ids.example"));
        refused("endpoint with a query", b -> b.endpoints("http://ids.example/?a=1"));
        refused("endpoint with a fragment", b -> b.endpoints("http://ids.example/#a"));
        refused("not a URL", b -> b.endpoints("http://ids example"));
        refused("health URLs of another length", b -> b.endpoints(EP).healthUrls(List.of("http://a/healthz", "http://b/healthz")));
        refused("bad health URL", b -> b.endpoints(EP).healthUrls(List.of("/healthz")));
        refused("HttpClient and TLS", b -> b.endpoints(EP).httpClient(HttpClient.newHttpClient()).sslContext(sslContext()));
        refused("negative maxAge", b -> b.endpoints(EP).maxAge(Duration.ofMillis(-1)));
        refused("negative requestTimeout", b -> b.endpoints(EP).requestTimeout(Duration.ofMillis(-1)));
        refused("refillPeriod not below maxAge", b -> b.endpoints(EP).maxAge(Duration.ofSeconds(1)).refillPeriod(Duration.ofSeconds(1)));
        refused("maxBackoff below baseBackoff", b -> b.endpoints(EP).baseBackoff(Duration.ofSeconds(1)).maxBackoff(Duration.ofMillis(1)));
        refused("negative minRefill", b -> b.endpoints(EP).minRefill(-1));
        refused("maxBuffer below minRefill", b -> b.endpoints(EP).minRefill(100).maxBuffer(10));
        refused("huge maxBuffer", b -> b.endpoints(EP).maxBuffer(1 << 30));
        refused("lowWater not below maxBuffer", b -> b.endpoints(EP).maxBuffer(100).lowWater(100));
        refused("negative failureThreshold", b -> b.endpoints(EP).failureThreshold(-3));
        refused("a CA file that is missing", b -> b.endpoints(EP).tls(Path.of("/nonexistent/ca.pem"), null, null));
        refused("a certificate without its key", b -> b.endpoints(EP).tls(pki("ca.pem"), pki("client.pem"), null));
        refused("a key that is not a key", b -> b.endpoints(EP).tls(pki("ca.pem"), pki("client.pem"), pki("ca.pem")));
    }

    private static javax.net.ssl.SSLContext sslContext() {
        try {
            return javax.net.ssl.SSLContext.getDefault();
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    static Path pki(String name) {
        try {
            return Path.of(SettingsTest.class.getResource("/pki/" + name).toURI());
        } catch (java.net.URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void defaults() {
        SnowfenceClient.Builder b = SnowfenceClient.builder().endpoints("http://127.0.0.1:1/", "https://ids.example:8443//");
        Settings s = Settings.check(b);
        assertEquals(List.of("http://127.0.0.1:1", "https://ids.example:8443"), s.endpoints);
        assertEquals(List.of("http://127.0.0.1:1/v1/ids:batch?count=", "https://ids.example:8443/v1/ids:batch?count="), s.mintUrls);
        assertEquals(List.of("http://127.0.0.1:1/healthz", "https://ids.example:8443/healthz"), s.healthUrls);
        assertEquals(Duration.ofSeconds(1).toNanos(), s.maxAge);
        assertEquals(Duration.ofMillis(250).toNanos(), s.refillPeriod);
        assertEquals(8, s.minRefill);
        assertEquals(65536, s.maxBuffer);
        assertEquals(0, s.lowWater);
        assertEquals(Duration.ofSeconds(2).toNanos(), s.requestTimeout);
        assertEquals(8, s.maxAttempts);
        assertEquals(Duration.ofMillis(50).toNanos(), s.baseBackoff);
        assertEquals(Duration.ofSeconds(2).toNanos(), s.maxBackoff);
        assertEquals(Duration.ofSeconds(10).toNanos(), s.maxRetryAfter);
        assertEquals(3, s.failureThreshold);
        assertEquals(3, s.recoveryProbes);
        assertEquals(Duration.ofSeconds(1).toNanos(), s.probeInterval);
        SnowfenceClient.builder().endpoints(EP).build().close();
    }
}
