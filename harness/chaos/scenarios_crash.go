package chaos

import (
	"math"
	"sync"
	"time"
)

// crashLoops kills a random holder and starts it again, 100 times.
func crashLoops(e *Env) error {
	t, err := e.drawTimings(fastBox)
	if err != nil {
		return err
	}
	every := scale(e, 250*time.Millisecond, 1500*time.Millisecond)
	const kills = 100
	// A SIGKILLed holder's number stays taken until its etcd lease (the
	// TTL, rounded up to whole seconds) runs out: each holder, killed
	// about every every × victims, keeps 1 + TTL / (every × victims)
	// numbers, and its range is that wide (it was 3 × 4 and 3 × 2 × 2 for
	// a 3 s lease, 4 services, 2 holders of 2 generators); a few spares
	// are drawn on top.
	nSvc, gens := e.count("services", 3, 5), e.count("generators per library holder", 1, 3)
	nLib := e.fixedCount("library holders", 2)
	ttl := t.LeaseFor.Round(time.Second)
	if ttl < t.LeaseFor {
		ttl += time.Second
	}
	perHolder := 1 + ttl.Seconds()/(every.Seconds()*float64(nSvc+nLib))
	svcN, libN := int(math.Ceil(float64(nSvc)*perHolder)), int(math.Ceil(float64(nLib*gens)*perHolder))
	sc := serviceConfig{machines: e.machines("services", svcN, svcN+4), supervise: true}.timed(t)
	svcs, err := e.startServices(nSvc, sc)
	if err != nil {
		return err
	}
	var libs []*library
	libM := e.machines("library holders", libN, libN+4)
	for range nLib {
		l, err := e.addLibrary(libraryConfig{machines: libM, generators: gens, rate: 5000, batch: 50}.timed(t))
		if err != nil {
			return err
		}
		libs = append(libs, l)
	}
	load := e.startLoad(svcs, loadConfig{callers: 4, rate: 20000, count: 20})
	if err := e.wait(2 * time.Second); err != nil {
		return err
	}
	var restarts sync.WaitGroup
	var slowest struct {
		sync.Mutex
		d                time.Duration
		killed, returned int // service kills, and restarts that served
	}
	for k := range kills {
		victim := e.rng.IntN(len(svcs) + len(libs))
		if victim < len(svcs) {
			s := svcs[victim]
			s.kill()
			if err := s.start(); err != nil {
				return err
			}
			slowest.Lock()
			slowest.killed++
			slowest.Unlock()
			restarts.Go(func() {
				t := time.Now()
				if s.waitServing(e.ctx, 60*time.Second) == nil {
					slowest.Lock()
					slowest.d = max(slowest.d, time.Since(t))
					slowest.returned++
					slowest.Unlock()
				}
			})
		} else {
			l := libs[victim-len(svcs)]
			e.kill(l.proc())
			if err := l.start(); err != nil {
				return err
			}
		}
		if k%20 == 19 {
			e.logf("%d kills", k+1)
		}
		if err := e.wait(every); err != nil {
			return err
		}
	}
	if err := e.waitServices(svcs, 60*time.Second); err != nil {
		return err
	}
	for _, l := range libs {
		if err := l.waitReady(e.ctx, 60*time.Second); err != nil {
			return err
		}
	}
	restarts.Wait()
	e.recovered(slowest.d, "the slowest restarted service to serve again")
	if err := e.wait(2 * time.Second); err != nil {
		return err
	}
	load.stop()
	e.check("every SIGKILLed service served again", slowest.returned == slowest.killed,
		"%d of %d service restarts served within 60 s (%d kills in all, one every %v; the library holders' restarts are checked by waitReady)",
		slowest.returned, slowest.killed, kills, every)
	return nil
}
