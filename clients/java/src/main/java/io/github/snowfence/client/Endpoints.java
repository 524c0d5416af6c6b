package io.github.snowfence.client;

import java.lang.System.Logger.Level;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The health of every endpoint (the Go client's endpoints.go). An endpoint
 * is in service until failureThreshold consecutive requests to it fail; it
 * is then probed every probeInterval and is back in service after
 * recoveryProbes consecutive healthy probes. Requests go to the first
 * endpoint in service, so the client returns to a better endpoint only once
 * it has proved healthy. When none is in service, requests go to each in
 * turn, and the first that answers is back in service.
 */
final class Endpoints {
    private static final class Endpoint {
        final String base, mint, health;
        boolean inService = true;
        int fails, healthy;

        Endpoint(String base, String mint, String health) {
            this.base = base;
            this.mint = mint;
            this.health = health;
        }
    }

    /** Where the next request goes: the endpoint's index, base URL and mint URL (without the count). */
    record Pick(int index, String base, String mint) {
    }

    private final int threshold, recovery;
    private final System.Logger log;
    private final ReentrantLock lock = new ReentrantLock();
    /** Signalled when an endpoint is taken out: the prober has work. */
    private final Condition probeWanted = lock.newCondition();
    private boolean probe;
    private final Endpoint[] list;
    /** The endpoint tried next when none is in service: they take turns. */
    private int next;

    Endpoints(Settings s) {
        threshold = s.failureThreshold;
        recovery = s.recoveryProbes;
        log = s.logger;
        list = new Endpoint[s.endpoints.size()];
        for (int i = 0; i < list.length; i++) {
            list[i] = new Endpoint(s.endpoints.get(i), s.mintUrls.get(i), s.healthUrls.get(i));
        }
    }

    int size() {
        return list.length;
    }

    /** Returns the endpoint the next request goes to: the first in service, or, when none is, each in turn. */
    Pick pick() {
        lock.lock();
        try {
            int i = firstLocked();
            if (i < 0) {
                i = next;
                next = (next + 1) % list.length;
            }
            return new Pick(i, list[i].base, list[i].mint);
        } finally {
            lock.unlock();
        }
    }

    private int firstLocked() {
        for (int i = 0; i < list.length; i++) {
            if (list[i].inService) {
                return i;
            }
        }
        return -1;
    }

    /** Records a request to endpoint i that brought IDs. One out of service that answers while none is in service is back. */
    void succeeded(int i) {
        lock.lock();
        try {
            Endpoint ep = list[i];
            ep.fails = 0;
            if (!ep.inService && firstLocked() < 0) {
                ep.inService = true;
                ep.healthy = 0;
                log.log(Level.INFO, () -> "snowfence client: endpoint " + ep.base + " back in service: it answered while no endpoint was in service");
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Records a failed request to endpoint i. Returns whether the failure
     * took the endpoint out of service while another is still in service, so
     * the next request can go there at once.
     */
    boolean failed(int i, Throwable err) {
        lock.lock();
        try {
            Endpoint ep = list[i];
            ep.fails++;
            if (!ep.inService || ep.fails < threshold) {
                return false;
            }
            ep.inService = false;
            ep.healthy = 0;
            int nx = firstLocked(), fails = ep.fails;
            if (nx >= 0) {
                String to = list[nx].base;
                log.log(Level.WARNING, () -> "snowfence client: endpoint " + ep.base + " out of service after " + fails
                        + " failures (" + err + "); failing over to " + to);
            } else {
                log.log(Level.WARNING, () -> "snowfence client: endpoint " + ep.base + " out of service after " + fails
                        + " failures (" + err + "); no endpoint is in service");
            }
            probe = true;
            probeWanted.signal();
            return nx >= 0;
        } finally {
            lock.unlock();
        }
    }

    /** Waits until an endpoint has been taken out since the last call. */
    void awaitProbeWanted() throws InterruptedException {
        lock.lock();
        try {
            while (!probe) {
                probeWanted.await();
            }
            probe = false;
        } finally {
            lock.unlock();
        }
    }

    /** Returns the health URLs of the endpoints out of service, by index. */
    Map<Integer, String> out() {
        lock.lock();
        try {
            Map<Integer, String> m = new LinkedHashMap<>();
            for (int i = 0; i < list.length; i++) {
                if (!list[i].inService) {
                    m.put(i, list[i].health);
                }
            }
            return m;
        } finally {
            lock.unlock();
        }
    }

    /** Records a probe of endpoint i. */
    void probed(int i, boolean healthy) {
        lock.lock();
        try {
            Endpoint ep = list[i];
            if (ep.inService) {
                return;
            }
            if (!healthy) {
                ep.healthy = 0;
                return;
            }
            ep.healthy++;
            if (ep.healthy >= recovery) {
                ep.inService = true;
                ep.fails = 0;
                ep.healthy = 0;
                log.log(Level.INFO, () -> "snowfence client: endpoint " + ep.base + " back in service after " + recovery + " healthy probes");
            }
        } finally {
            lock.unlock();
        }
    }

    /** Returns the index of the first endpoint in service (or -1), and which are in service. */
    int first(boolean[] inService) {
        lock.lock();
        try {
            for (int i = 0; i < list.length; i++) {
                inService[i] = list[i].inService;
            }
            return firstLocked();
        } finally {
            lock.unlock();
        }
    }
}
