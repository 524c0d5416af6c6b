package io.github.snowfence.client;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.http.HttpClient;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongUnaryOperator;
import javax.net.ssl.SSLContext;

/**
 * A client of the snowfence HTTP service that makes an ID cost about what
 * a call on a local object costs: it fetches IDs in batches
 * ({@code POST /v1/ids:batch?count=N}) into a buffer ahead of need and hands
 * them out one by one, and it retries and fails over across an ordered list
 * of endpoints. It has the Go client's semantics (package {@code client} of
 * the snowfence module); see the README beside this library.
 *
 * <pre>{@code
 * try (SnowfenceClient ids = SnowfenceClient.builder()
 *         .endpoints("https://ids.eu-west.corp", "https://ids.us-east.corp")
 *         .build()) {
 *     long id = ids.next();
 * }
 * }</pre>
 *
 * <p><b>The buffer.</b> IDs received are handed out in the order received,
 * each exactly once. When {@link #next()} leaves the buffer at or below its
 * low-water mark it asks for one refill in the background; at most one
 * refill runs at a time. A refill's size follows the rate at which callers
 * took IDs since the last one, aiming for one refill every refill period: it
 * at most doubles or halves from one refill to the next, and stays between
 * the minimum refill and the room left in the buffer. A refill larger than
 * 1,000 IDs is several requests, one after another, each response's IDs
 * handed out as soon as it arrives. When the buffer is empty, next waits for
 * the refill in flight, or starts one.
 *
 * <p><b>Age.</b> A buffered ID expires maxAge after the request that fetched
 * it was sent, and is then dropped, never handed out.
 *
 * <p><b>Order.</b> While one server answers, every ID the client hands out
 * is greater than the one before, and each thread's IDs increase too. Across
 * a failover they do not: another server mints from its own clock and
 * machine number.
 *
 * <p><b>Never twice, never invented.</b> Only IDs from a 200 whose whole body
 * parsed as exactly the batch asked for are buffered; each buffered ID is
 * handed out at most once; IDs dropped for age, by close, or by a nextN that
 * failed are never handed out.
 *
 * <p><b>Retries and failover.</b> A failed request (503 or another 5xx,
 * 429, a connection error or timeout, a malformed answer) is retried after
 * a jittered exponential wait that is at least the answer's Retry-After (up
 * to maxRetryAfter); a 4xx other than 429 is not retried and is thrown
 * ({@link RejectedException}). After maxAttempts requests a refill gives up,
 * and the callers waiting on it get an {@link UnavailableException}.
 * Requests go to the first endpoint in service; failureThreshold
 * consecutive failures (a 429 does not count) take an endpoint out of
 * service, and the next request goes at once to the next in service.
 * Endpoints out of service are probed on {@code /healthz} every
 * probeInterval; recoveryProbes consecutive 200s put one back.
 *
 * <p><b>Threads.</b> A client is safe for concurrent use. It runs two daemon
 * threads, the refill and the probes, which {@link #close()} stops.
 */
public final class SnowfenceClient implements AutoCloseable {
    /** The most IDs one request, and one {@link #nextN(int)}, takes. */
    public static final int MAX_BATCH = 1000;

    final Settings s;
    final TimeSource time;
    private final Transport transport;
    final Endpoints eps;
    private final Fetcher fetcher;
    private final System.Logger log;
    /** Returns a random duration in [0, d]; tests replace it. */
    volatile LongUnaryOperator jitter = SnowfenceClient::randomJitter;

    // The hot path is next(): one uncontended lock, one clock read, one
    // array load. A lock (rather than a lock-free queue) because the age
    // check, the low-water check and the hand-out must be one step, and an
    // uncontended ReentrantLock costs one compare-and-set on each side.
    final ReentrantLock lock = new ReentrantLock();
    /** Signalled when IDs arrive, a refill ends, or the client closes (if anyone waits). */
    private final Condition changed = lock.newCondition();
    /** Signalled when a refill is asked for. */
    private final Condition kick = lock.newCondition();
    final IdBuffer buf;
    /** True from the moment a refill is asked for until it ends: at most one runs. */
    private boolean refilling;
    private boolean kicked;
    private boolean closed;
    /** closed, readable without the lock by the refill's retry loop. */
    volatile boolean closing;
    private int waiters;
    /** How many IDs waiting callers still need. */
    int demand;
    /** The number of refills that ended, and the last one's failure (null if it brought all it asked for). */
    private long ended;
    private SnowfenceException refillErr;
    /** The current refill size and low-water mark; the clock and handedOut at the last plan. */
    int size, low;
    private boolean planned;
    private long planAt, takenAtPlan;
    long handedOut;
    private long received, discarded;
    final AtomicLong requests = new AtomicLong(), failures = new AtomicLong();

    private final Thread refillThread, probeThread;

    /**
     * Returns a builder; {@link Builder#endpoints(String...)} is the one required setting.
     *
     * @return a builder; {@link Builder#endpoints(String...)} is the one required setting
     */
    public static Builder builder() {
        return new Builder();
    }

    SnowfenceClient(Settings s, Transport transport) {
        this.s = s;
        this.time = s.time;
        this.log = s.logger;
        this.transport = transport;
        this.eps = new Endpoints(s);
        this.fetcher = new Fetcher(this, s, transport, eps);
        this.buf = new IdBuffer(s.maxBuffer);
        this.size = s.minRefill;
        this.low = s.lowWater != 0 ? s.lowWater : size / 2;
        refillThread = new Thread(this::refillLoop, "snowfence-refill");
        probeThread = new Thread(this::probeLoop, "snowfence-probe");
        refillThread.setDaemon(true);
        probeThread.setDaemon(true);
        refillThread.start();
        probeThread.start();
    }

    /**
     * Returns the next ID from the buffer. From a warm buffer it takes the
     * lock, reads the monotonic clock once and allocates nothing. The clock
     * is read on every call, under the lock, because that is the only way
     * to be sure no ID is handed out past maxAge: a background timer that
     * dropped chunks as they expired would fire late under load, and a
     * clock read once for several calls would be stale. When the buffer is
     * empty it waits for the refill in flight (or starts one).
     *
     * @return the ID, positive
     * @throws UnavailableException     if the refill it waited for gave up
     * @throws RejectedException        if the refill it waited for got a 4xx other than 429
     * @throws ClosedException          if the client is closed, or closes while it waits
     * @throws WaitInterruptedException if the thread is interrupted while it waits
     */
    public long next() {
        final ReentrantLock lock = this.lock;
        lock.lock();
        try {
            long id = buf.take(time.nanoTime());
            if (id != 0) {
                handedOut++;
                if (buf.len() <= low && !refilling) {
                    startRefillLocked();
                }
                return id;
            }
        } finally {
            lock.unlock();
        }
        long[] one = new long[1];
        take(one, 0, 1);
        return one[0];
    }

    /**
     * Returns n IDs (1 ≤ n ≤ 1000) in the order the buffer holds them. On
     * error it returns none; any it had taken are discarded, never handed
     * out. When the buffer holds fewer than n it takes what is there and
     * waits for a refill; the IDs it holds age meanwhile, and if the oldest
     * reaches maxAge before the call can return it drops them all (counted
     * in {@link Stats#expired()}) and takes again, so no ID it returns has
     * reached maxAge at the moment it returns.
     *
     * @param n how many IDs
     * @return the IDs
     * @throws InvalidCountException if n is not 1 to 1000; and as {@link #next()}
     */
    public long[] nextN(int n) {
        if (n < 1 || n > MAX_BATCH) {
            throw new InvalidCountException(n);
        }
        if (n > s.maxBuffer) {
            // Gathered over several refills, the first IDs would age past
            // maxAge while the last arrive, be dropped and gathered again
            // without end (as the Go client, found by an attack).
            throw new InvalidCountException(n, s.maxBuffer);
        }
        long[] dst = new long[n];
        take(dst, 0, n);
        return dst;
    }

    /**
     * Is {@link #nextN(int)} into dst[off..off+n); from a warm buffer it
     * allocates nothing. On error dst is left as it was.
     *
     * @param dst where the IDs go
     * @param off the first index written
     * @param n   how many IDs, 1 to 1000
     * @throws InvalidCountException     if n is not 1 to 1000
     * @throws IndexOutOfBoundsException if dst has no room for them; and as {@link #next()}
     */
    public void nextN(long[] dst, int off, int n) {
        if (n < 1 || n > MAX_BATCH) {
            throw new InvalidCountException(n);
        }
        if (n > s.maxBuffer) {
            // Gathered over several refills, the first IDs would age past
            // maxAge while the last arrive, be dropped and gathered again
            // without end (as the Go client, found by an attack).
            throw new InvalidCountException(n, s.maxBuffer);
        }
        java.util.Objects.checkFromIndexSize(off, n, dst.length);
        take(dst, off, n);
    }

    /** The Go client's AppendN: takes n IDs into dst from off, waiting for refills. */
    private void take(long[] dst, int off, int n) {
        int got = 0;
        // dl is the earliest deadline of the chunks the IDs in dst came
        // from: they age while the call waits for more, and none may be
        // handed out once it has passed.
        boolean hasDl = false;
        long dl = 0;
        lock.lock();
        try {
            for (;;) {
                long now = time.nanoTime();
                int k = buf.takeN(dst, off + got, n - got, now);
                if (k > 0) {
                    handedOut += k;
                    if (!hasDl || buf.takenDeadline - dl < 0) {
                        dl = buf.takenDeadline;
                        hasDl = true;
                    }
                    got += k;
                }
                if (buf.len() <= low && !refilling && !closed) {
                    startRefillLocked();
                }
                if (hasDl && now - dl >= 0) {
                    // Held past maxAge while waiting for a refill: drop them
                    // all (IDs come out oldest first, so the rest are the
                    // newest) and take again from what the refill brought.
                    buf.expired += got;
                    handedOut -= got;
                    got = 0;
                    hasDl = false;
                    continue;
                }
                // now was read under the lock, just now: no ID in dst has
                // reached its deadline when the call returns.
                if (got == n) {
                    return;
                }
                if (closed) {
                    throw abandonLocked(got, new ClosedException());
                }
                int need = n - got;
                if (!refilling) {
                    startRefillLocked();
                }
                long endedBefore = ended;
                demand += need;
                waiters++;
                InterruptedException interrupted = null;
                try {
                    changed.await();
                } catch (InterruptedException e) {
                    interrupted = e;
                }
                demand -= need;
                waiters--;
                if (interrupted != null) {
                    Thread.currentThread().interrupt();
                    throw abandonLocked(got, new WaitInterruptedException(interrupted));
                }
                if (closed) {
                    throw abandonLocked(got, new ClosedException());
                }
                if (ended != endedBefore && refillErr != null && buf.len() == 0) {
                    throw abandonLocked(got, refillErr.rethrown());
                }
            }
        } finally {
            lock.unlock();
        }
    }

    /** Ends a waiting take with e: the IDs it took are discarded. */
    private SnowfenceException abandonLocked(int got, SnowfenceException e) {
        discarded += got;
        handedOut -= got;
        return e;
    }

    private void startRefillLocked() {
        refilling = true;
        kicked = true;
        kick.signal();
    }

    private void broadcastLocked() {
        if (waiters > 0 || closed) {
            changed.signalAll();
        }
    }

    /** The refill thread: runs the refills, one at a time, as next asks for them. */
    private void refillLoop() {
        for (;;) {
            lock.lock();
            try {
                while (!kicked && !closed) {
                    kick.awaitUninterruptibly();
                }
                if (closed) {
                    return;
                }
                kicked = false;
            } finally {
                lock.unlock();
            }
            try {
                refill();
            } catch (RuntimeException e) {
                SnowfenceException err = e instanceof SnowfenceException x ? x
                        : new SnowfenceException("snowfence client: refill failed: " + e, e);
                lock.lock();
                try {
                    endRefillLocked(err);
                    if (!closed) {
                        log.log(Level.WARNING, () -> "snowfence client: refill failed: " + err.getMessage());
                    }
                    broadcastLocked();
                } finally {
                    lock.unlock();
                }
            }
        }
    }

    /**
     * Ends the refill: from here next may start another. A refill that
     * brings all it asked for ends in the same step as its last IDs arrive,
     * so a caller that takes them and leaves the buffer at the low-water
     * mark starts the next refill; ending it a step later, the caller could
     * find it still running and start none.
     */
    private void endRefillLocked(SnowfenceException err) {
        refilling = false;
        ended++;
        refillErr = err;
    }

    /**
     * Fetches one refill's IDs, a request of at most 1,000 at a time, adding
     * each response's IDs as it arrives, and ends the refill with the last.
     */
    private void refill() {
        int want;
        lock.lock();
        try {
            want = planLocked();
            if (want <= 0) {
                endRefillLocked(null);
                broadcastLocked();
                return;
            }
        } finally {
            lock.unlock();
        }
        for (int got = 0; got < want;) {
            int n = Math.min(want - got, MAX_BATCH);
            fetcher.fetch(n);
            lock.lock();
            try {
                if (closed) {
                    discarded += n;
                    throw new ClosedException();
                }
                // Age counts from the moment the request was sent: the
                // server minted the IDs after it.
                buf.push(fetcher.ids, n, fetcher.sent + s.maxAge);
                received += n;
                got += n;
                if (got >= want) {
                    endRefillLocked(null);
                }
                broadcastLocked();
            } finally {
                lock.unlock();
            }
        }
    }

    /**
     * Sizes the next refill from the rate at which IDs were handed out since
     * the last one: about rate × refillPeriod, at most twice and at least
     * half the last size, at least minRefill and what waiting callers need,
     * and no more than the buffer has room for. It also sets the low-water
     * mark to half the size when lowWater is not set.
     */
    int planLocked() {
        long now = time.nanoTime();
        buf.dropExpired(now);
        int sz = size;
        if (planned) {
            long elapsed = now - planAt;
            if (elapsed > 0) {
                double rate = (double) (handedOut - takenAtPlan) / elapsed;
                int want = (int) Math.min(rate * s.refillPeriod, s.maxBuffer);
                sz = Math.min(Math.max(want, sz / 2), sz * 2);
            }
        }
        size = Math.min(Math.max(sz, s.minRefill), s.maxBuffer);
        planned = true;
        planAt = now;
        takenAtPlan = handedOut;
        if (s.lowWater == 0) {
            low = size / 2;
        }
        return Math.min(Math.max(size, demand), s.maxBuffer - buf.len());
    }

    /** The probe thread: probes the endpoints out of service every probeInterval until none is out, then waits. */
    private void probeLoop() {
        try {
            while (!closing) {
                eps.awaitProbeWanted();
                for (Map<Integer, String> out = eps.out(); !out.isEmpty() && !closing; out = eps.out()) {
                    time.sleep(s.probeInterval);
                    for (Map.Entry<Integer, String> e : out.entrySet()) {
                        eps.probed(e.getKey(), probe(e.getValue()));
                    }
                }
            }
        } catch (InterruptedException e) {
            // closing
        }
    }

    private boolean probe(String url) throws InterruptedException {
        try {
            return transport.get(url, s.requestTimeout) == 200;
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /**
     * Stops the client: it waits for its threads to end (a request in
     * flight is abandoned, its IDs never handed out), drops the IDs in the
     * buffer, and makes every waiting and later call fail with
     * {@link ClosedException}. Idempotent.
     */
    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            closing = true;
            discarded += buf.clear();
            broadcastLocked();
            kick.signalAll();
        } finally {
            lock.unlock();
        }
        refillThread.interrupt();
        probeThread.interrupt();
        // Closing the transport ends a read in progress on a socket, which
        // an interrupt does not.
        transport.close();
        boolean interrupted = false;
        for (Thread t : new Thread[] {refillThread, probeThread}) {
            for (;;) {
                try {
                    t.join();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Starts a refill unless one runs, waits for a refill to end, and returns
     * how many IDs the buffer holds: for tests and the benchmark, which fill
     * the buffer before they time the hand-out.
     */
    int refillAndWait() throws InterruptedException {
        lock.lock();
        try {
            long before = ended;
            if (!refilling) {
                startRefillLocked();
            }
            while (ended == before || refilling) {
                waiters++;
                try {
                    changed.await();
                } finally {
                    waiters--;
                }
            }
            return buf.len();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Returns the client's counters.
     *
     * @return the client's counters
     */
    public Stats stats() {
        int buffered;
        long handed, recv, exp, disc;
        lock.lock();
        try {
            buffered = buf.len();
            handed = handedOut;
            recv = received;
            exp = buf.expired;
            disc = discarded;
        } finally {
            lock.unlock();
        }
        boolean[] in = new boolean[eps.size()];
        int first = eps.first(in);
        List<Boolean> inService = new ArrayList<>(in.length);
        for (boolean b : in) {
            inService.add(b);
        }
        return new Stats(buffered, handed, recv, exp, disc, requests.get(), failures.get(), first, List.copyOf(inService));
    }

    private static long randomJitter(long d) {
        return d <= 0 ? 0 : ThreadLocalRandom.current().nextLong(d + 1);
    }

    /**
     * Configures a {@link SnowfenceClient}. Every setting but
     * {@link #endpoints(String...)} may be left unset; each says what unset
     * (or zero) means. Negative numbers and durations are refused by
     * {@link #build()}.
     */
    public static final class Builder {
        List<String> endpoints, healthUrls;
        Duration requestTimeout, maxAge, refillPeriod, baseBackoff, maxBackoff, maxRetryAfter, probeInterval;
        int minRefill, maxBuffer, lowWater, maxAttempts, failureThreshold, recoveryProbes;
        Schedule repeatCheck;
        System.Logger logger;
        TimeSource time;
        HttpClient httpClient;
        SSLContext sslContext;
        Path caFile, certFile, keyFile;
        Transport transport;

        Builder() {
        }

        /**
         * The base URLs of the servers, in order of preference: the local
         * region first, backups after. Requests go to the first endpoint in
         * service. Required; each must be an absolute http or https URL
         * without a query; a trailing slash is ignored.
         *
         * @param urls the base URLs
         * @return this builder
         */
        public Builder endpoints(String... urls) {
            return endpoints(Arrays.asList(urls));
        }

        /**
         * As {@link #endpoints(String...)}.
         *
         * @param urls the base URLs
         * @return this builder
         */
        public Builder endpoints(List<String> urls) {
            endpoints = List.copyOf(urls);
            return this;
        }

        /**
         * The URLs probed for each endpoint, in the order of the endpoints.
         * Unset means each endpoint's {@code /healthz}. Set them when
         * {@code /healthz} is served on a separate admin listener.
         *
         * @param urls one health URL per endpoint
         * @return this builder
         */
        public Builder healthUrls(List<String> urls) {
            healthUrls = urls == null ? null : List.copyOf(urls);
            return this;
        }

        /**
         * The bound on one request, its body included. Unset means
         * {@link Defaults#REQUEST_TIMEOUT}. Measured by the JDK's timers,
         * not the time source: it guards against real network stalls.
         *
         * @param d the timeout
         * @return this builder
         */
        public Builder requestTimeout(Duration d) {
            requestTimeout = d;
            return this;
        }

        /**
         * How long a buffered ID may wait: an ID is handed out only while
         * less than maxAge has passed since the request that fetched it was
         * sent (the server minted it after that moment, so this overstates
         * its age and never understates it); older IDs are dropped, never
         * handed out. Unset means {@link Defaults#MAX_AGE}, one second.
         *
         * <p>An ID's timestamp is the moment the server minted it, so an ID
         * handed out from the buffer is up to maxAge older than the moment
         * next returned it: a caller that reads time from an ID is off by up
         * to maxAge, and a caller that sorts records by ID sees two records
         * created up to maxAge apart in either order. Uniqueness does not
         * depend on it.
         *
         * @param d the age
         * @return this builder
         */
        public Builder maxAge(Duration d) {
            maxAge = d;
            return this;
        }

        /**
         * The time one refill should last at the callers' observed rate:
         * each refill asks for about rate × refillPeriod IDs, at most twice
         * and at least half the previous refill, within minRefill and the
         * room in the buffer. Unset means maxAge / 4. It must be less than
         * maxAge.
         *
         * @param d the period
         * @return this builder
         */
        public Builder refillPeriod(Duration d) {
            refillPeriod = d;
            return this;
        }

        /**
         * The smallest refill. Unset means {@link Defaults#MIN_REFILL}.
         *
         * @param n the count
         * @return this builder
         */
        public Builder minRefill(int n) {
            minRefill = n;
            return this;
        }

        /**
         * The most IDs the client holds. Unset means
         * {@link Defaults#MAX_BUFFER}. It must be at least minRefill and at
         * most 2^26.
         *
         * @param n the count
         * @return this builder
         */
        public Builder maxBuffer(int n) {
            maxBuffer = n;
            return this;
        }

        /**
         * The number of buffered IDs at or below which next starts a refill
         * in the background. Unset means half the current refill size, so a
         * refill has about half a refill period to arrive before the buffer
         * runs dry. It must be less than maxBuffer.
         *
         * @param n the count
         * @return this builder
         */
        public Builder lowWater(int n) {
            lowWater = n;
            return this;
        }

        /**
         * How many requests a refill sends (retries and failovers included)
         * before it gives up with {@link UnavailableException}. Unset means
         * {@link Defaults#MAX_ATTEMPTS}.
         *
         * @param n the count
         * @return this builder
         */
        public Builder maxAttempts(int n) {
            maxAttempts = n;
            return this;
        }

        /**
         * The smallest bound of the wait after a failed attempt: the wait is
         * between half and all of baseBackoff·2^k, at most maxBackoff, where
         * k counts a request's failures since it last failed over from an
         * endpoint it had not failed over from before. Unset means
         * {@link Defaults#BASE_BACKOFF}.
         *
         * @param d the duration
         * @return this builder
         */
        public Builder baseBackoff(Duration d) {
            baseBackoff = d;
            return this;
        }

        /**
         * The largest wait after a failed attempt (see
         * {@link #baseBackoff(Duration)}). Unset means
         * {@link Defaults#MAX_BACKOFF}. It must be at least baseBackoff.
         *
         * @param d the duration
         * @return this builder
         */
        public Builder maxBackoff(Duration d) {
            maxBackoff = d;
            return this;
        }

        /**
         * The cap on the Retry-After honoured after a 503 or 429. Unset
         * means {@link Defaults#MAX_RETRY_AFTER}.
         *
         * @param d the duration
         * @return this builder
         */
        public Builder maxRetryAfter(Duration d) {
            maxRetryAfter = d;
            return this;
        }

        /**
         * How many consecutive failed requests (503 and other 5xx,
         * connection errors, timeouts, malformed answers; not 429) take an
         * endpoint out of service. Unset means {@link Defaults#FAILURE_THRESHOLD}.
         *
         * @param n the count
         * @return this builder
         */
        public Builder failureThreshold(int n) {
            failureThreshold = n;
            return this;
        }

        /**
         * How many consecutive 200s from an endpoint's health URL put it
         * back in service. Unset means {@link Defaults#RECOVERY_PROBES}.
         *
         * @param n the count
         * @return this builder
         */
        public Builder recoveryProbes(int n) {
            recoveryProbes = n;
            return this;
        }

        /**
         * How often endpoints out of service are probed. Unset means
         * {@link Defaults#PROBE_INTERVAL}.
         *
         * @param d the interval
         * @return this builder
         */
        public Builder probeInterval(Duration d) {
            probeInterval = d;
            return this;
        }

        /**
         * Makes the client refuse an answer that repeats IDs it received
         * before, such as a response replayed by a proxy (the Go client's
         * Config.Schedule). Give the schedule the servers mint with
         * ({@link Schedule#V1} for v1). Unset means no such check: the
         * client then trusts the servers, and whatever stands between them
         * and it, never to answer with IDs they answered before; it checks
         * only that each answer's IDs strictly increase.
         *
         * <p>With it, the client decodes each answer's first and last IDs
         * and remembers, for each (layout, region number, machine number),
         * the last ID it received; an answer whose IDs of some stream do not
         * start above the last one received for it yields no IDs, fails as
         * a {@link BadResponseException}, and counts as a failure of the
         * endpoint. This never refuses a sound answer when the endpoints
         * share one ID space, as they must for uniqueness.
         *
         * @param schedule the servers' schedule
         * @return this builder
         */
        public Builder repeatCheck(Schedule schedule) {
            repeatCheck = schedule;
            return this;
        }

        /**
         * The TLS of the client's own HTTP client: the CA certificates to
         * trust (PEM) and, for mutual TLS, a client certificate chain and
         * its private key (PEM; PKCS#8, SEC1 EC or PKCS#1 RSA, unencrypted).
         * The files are read by {@link #build()}, which refuses them with an
         * {@link InvalidConfigException} if they cannot be used.
         *
         * @param caFile   the CA bundle
         * @param certFile the client certificate, or null for none
         * @param keyFile  its key, or null for none
         * @return this builder
         */
        public Builder tls(Path caFile, Path certFile, Path keyFile) {
            this.caFile = caFile;
            this.certFile = certFile;
            this.keyFile = keyFile;
            return this;
        }

        /**
         * The TLS context of the client's own HTTP client, as an
         * alternative to {@link #tls(Path, Path, Path)}.
         *
         * @param ctx the context
         * @return this builder
         */
        public Builder sslContext(SSLContext ctx) {
            sslContext = ctx;
            return this;
        }

        /**
         * An HTTP client to send every request with, as it is configured
         * (a proxy, an executor, its TLS). Unset means the client's own
         * transport: HTTP/1.1 on keep-alive sockets, redirects not followed,
         * with the TLS settings; it is leaner than {@code HttpClient}, whose
         * answers cross several threads (see the README). Setting both this
         * and TLS is an error: configure the TLS of your own client instead.
         * Give it {@code Redirect.NEVER}: IDs from an answer that came after
         * a redirect are refused.
         *
         * @param http the HTTP client
         * @return this builder
         */
        public Builder httpClient(HttpClient http) {
            httpClient = http;
            return this;
        }

        /**
         * Where the client's few log lines go (endpoints taken out and back,
         * refills that failed). Unset means
         * {@code System.getLogger("io.github.snowfence.client")}.
         *
         * @param logger the logger
         * @return this builder
         */
        public Builder logger(System.Logger logger) {
            this.logger = logger;
            return this;
        }

        /**
         * The clocks and sleep the client uses. Unset means
         * {@link TimeSource#system()}; tests give a fake.
         *
         * @param time the time source
         * @return this builder
         */
        public Builder timeSource(TimeSource time) {
            this.time = time;
            return this;
        }

        /** Sends requests through t instead of HTTP: for tests and the benchmark. */
        Builder transport(Transport t) {
            transport = t;
            return this;
        }

        /**
         * Checks the settings and returns a client with an empty buffer; the
         * first next fills it. It starts two daemon threads (the refill and
         * the health probes), which {@link SnowfenceClient#close()} stops. It
         * sends no request.
         *
         * @return the client
         * @throws InvalidConfigException if a setting cannot be used
         */
        public SnowfenceClient build() {
            Settings s = Settings.check(this);
            Transport t = transport != null ? transport
                    : s.httpClient != null ? new HttpTransport(s.httpClient) : new SocketTransport(s.sslContext);
            return new SnowfenceClient(s, t);
        }
    }
}
