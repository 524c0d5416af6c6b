package io.github.snowfence.client;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * Builds an {@link SSLContext} from PEM files with the JDK alone: the CA
 * certificates to trust, and optionally a client certificate (chain) and its
 * private key for mutual TLS. Keys may be PKCS#8 ({@code PRIVATE KEY}: EC,
 * RSA, Ed25519), SEC1 ({@code EC PRIVATE KEY}, a named curve) or PKCS#1
 * ({@code RSA PRIVATE KEY}); encrypted keys are not read.
 */
final class Pem {
    private Pem() {
    }

    /** One PEM block: its label and its DER bytes. */
    record Block(String label, byte[] der) {
    }

    /** Returns the PEM blocks of a text, in order. */
    static List<Block> blocks(String text) throws IOException {
        List<Block> out = new ArrayList<>();
        int at = 0;
        for (;;) {
            int b = text.indexOf("-----BEGIN ", at);
            if (b < 0) {
                return out;
            }
            int le = text.indexOf("-----", b + 11);
            if (le < 0) {
                throw new IOException("a PEM BEGIN line without its closing dashes");
            }
            String label = text.substring(b + 11, le);
            String end = "-----END " + label + "-----";
            int e = text.indexOf(end, le + 5);
            if (e < 0) {
                throw new IOException("PEM block " + label + " has no END line");
            }
            String body = text.substring(le + 5, e).replaceAll("\\s", "");
            if (body.contains(":")) {
                throw new IOException("PEM block " + label + " has headers (an encrypted key?); give an unencrypted PKCS#8 key");
            }
            try {
                out.add(new Block(label, Base64.getDecoder().decode(body)));
            } catch (IllegalArgumentException x) {
                throw new IOException("PEM block " + label + " is not base64: " + x.getMessage());
            }
            at = e + end.length();
        }
    }

    /**
     * Returns a TLS context trusting the certificates of caFile and, when
     * certFile and keyFile are not null, presenting that certificate chain
     * and key.
     */
    static SSLContext sslContext(Path caFile, Path certFile, Path keyFile) throws IOException, GeneralSecurityException {
        CertificateFactory cf = CertificateFactory.getInstance("X.509");
        KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
        trust.load(null, null);
        List<Certificate> cas = certificates(cf, caFile);
        for (int i = 0; i < cas.size(); i++) {
            trust.setCertificateEntry("ca" + i, cas.get(i));
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(trust);
        KeyManagerFactory kmf = null;
        if (certFile != null || keyFile != null) {
            if (certFile == null || keyFile == null) {
                throw new IOException("a client certificate needs both its certificate file and its key file");
            }
            List<Certificate> chain = certificates(cf, certFile);
            PrivateKey key = privateKey(keyFile);
            KeyStore ks = KeyStore.getInstance("PKCS12");
            ks.load(null, null);
            char[] pw = new char[0];
            ks.setKeyEntry("client", key, pw, chain.toArray(new Certificate[0]));
            kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(ks, pw);
        }
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(kmf == null ? null : kmf.getKeyManagers(), tmf.getTrustManagers(), null);
        return ctx;
    }

    private static List<Certificate> certificates(CertificateFactory cf, Path file) throws IOException, GeneralSecurityException {
        List<Certificate> out = new ArrayList<>();
        for (Block b : blocks(Files.readString(file, StandardCharsets.US_ASCII))) {
            if (b.label().equals("CERTIFICATE")) {
                out.add(cf.generateCertificate(new ByteArrayInputStream(b.der())));
            }
        }
        if (out.isEmpty()) {
            throw new IOException(file + " holds no PEM CERTIFICATE block");
        }
        return out;
    }

    /** Reads the first private key block of a PEM file. */
    static PrivateKey privateKey(Path file) throws IOException, GeneralSecurityException {
        for (Block b : blocks(Files.readString(file, StandardCharsets.US_ASCII))) {
            switch (b.label()) {
                case "PRIVATE KEY":
                    return pkcs8(b.der());
                case "EC PRIVATE KEY":
                    return KeyFactory.getInstance("EC").generatePrivate(new PKCS8EncodedKeySpec(sec1ToPkcs8(b.der())));
                case "RSA PRIVATE KEY":
                    return KeyFactory.getInstance("RSA").generatePrivate(new PKCS8EncodedKeySpec(wrap(RSA_ALGORITHM, b.der())));
                case "ENCRYPTED PRIVATE KEY":
                    throw new IOException(file + " holds an encrypted key; give an unencrypted PKCS#8 key");
                default:
                    // skip other blocks (parameters, certificates)
            }
        }
        throw new IOException(file + " holds no PEM PRIVATE KEY, EC PRIVATE KEY or RSA PRIVATE KEY block");
    }

    private static PrivateKey pkcs8(byte[] der) throws GeneralSecurityException {
        GeneralSecurityException last = null;
        for (String alg : new String[] {"EC", "RSA", "Ed25519", "RSASSA-PSS"}) {
            try {
                return KeyFactory.getInstance(alg).generatePrivate(new PKCS8EncodedKeySpec(der));
            } catch (GeneralSecurityException e) {
                last = e;
            }
        }
        throw new GeneralSecurityException("the PKCS#8 key is not an EC, RSA or Ed25519 key", last);
    }

    // AlgorithmIdentifier DER: SEQUENCE { OID rsaEncryption, NULL }.
    private static final byte[] RSA_ALGORITHM = {0x30, 0x0d, 0x06, 0x09, 0x2a, (byte) 0x86, 0x48, (byte) 0x86, (byte) 0xf7, 0x0d,
        0x01, 0x01, 0x01, 0x05, 0x00};
    // OID id-ecPublicKey (1.2.840.10045.2.1).
    private static final byte[] EC_PUBLIC_KEY_OID = {0x06, 0x07, 0x2a, (byte) 0x86, 0x48, (byte) 0xce, 0x3d, 0x02, 0x01};

    /**
     * Wraps a SEC1 ECPrivateKey (RFC 5915) into PKCS#8, taking the named
     * curve from its [0] parameters.
     */
    static byte[] sec1ToPkcs8(byte[] sec1) throws IOException {
        // ECPrivateKey ::= SEQUENCE { version INTEGER, privateKey OCTET STRING,
        //   parameters [0] ECParameters OPTIONAL, publicKey [1] BIT STRING OPTIONAL }
        Der seq = new Der(sec1, 0);
        if (seq.tag != 0x30) {
            throw new IOException("the EC PRIVATE KEY is not a DER SEQUENCE");
        }
        int p = seq.start;
        byte[] curve = null;
        while (p < seq.end) {
            Der f = new Der(sec1, p);
            if (f.tag == 0xa0) {
                Der oid = new Der(sec1, f.start);
                if (oid.tag != 0x06) {
                    throw new IOException("the EC PRIVATE KEY's parameters are not a named curve");
                }
                curve = java.util.Arrays.copyOfRange(sec1, f.start, oid.end);
            }
            p = f.end;
        }
        if (curve == null) {
            throw new IOException("the EC PRIVATE KEY names no curve; give the key in PKCS#8 (openssl pkcs8 -topk8 -nocrypt)");
        }
        ByteArrayOutputStream alg = new ByteArrayOutputStream();
        alg.writeBytes(EC_PUBLIC_KEY_OID);
        alg.writeBytes(curve);
        return wrap(tlv(0x30, alg.toByteArray()), sec1);
    }

    /** Returns PKCS#8 PrivateKeyInfo: SEQUENCE { INTEGER 0, algorithm, OCTET STRING key }. */
    private static byte[] wrap(byte[] algorithm, byte[] key) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.writeBytes(new byte[] {0x02, 0x01, 0x00});
        b.writeBytes(algorithm);
        b.writeBytes(tlv(0x04, key));
        return tlv(0x30, b.toByteArray());
    }

    private static byte[] tlv(int tag, byte[] value) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.write(tag);
        int n = value.length;
        if (n < 0x80) {
            b.write(n);
        } else if (n < 0x100) {
            b.write(0x81);
            b.write(n);
        } else if (n < 0x10000) {
            b.write(0x82);
            b.write(n >> 8);
            b.write(n);
        } else {
            b.write(0x83);
            b.write(n >> 16);
            b.write(n >> 8);
            b.write(n);
        }
        b.writeBytes(value);
        return b.toByteArray();
    }

    /** One DER element: its tag, and where its value starts and ends. */
    private static final class Der {
        final int tag, start, end;

        Der(byte[] b, int at) throws IOException {
            if (at + 2 > b.length) {
                throw new IOException("DER cut short");
            }
            tag = b[at] & 0xff;
            int len = b[at + 1] & 0xff;
            int p = at + 2;
            if (len >= 0x80) {
                int k = len & 0x7f;
                if (k == 0 || k > 3 || p + k > b.length) {
                    throw new IOException("bad DER length");
                }
                len = 0;
                for (int i = 0; i < k; i++) {
                    len = len << 8 | (b[p++] & 0xff);
                }
            }
            if (p + len > b.length) {
                throw new IOException("DER cut short");
            }
            start = p;
            end = p + len;
        }
    }
}
