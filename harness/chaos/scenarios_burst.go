package chaos

import "time"

// bursts asks one service for far more than 4,096 IDs per millisecond and
// runs a library generator flat out.
func bursts(e *Env) error {
	t, err := e.drawTimings(steadyBox)
	if err != nil {
		return err
	}
	// One service and one library generator, each on a number of its own
	// (drawn), whose IDs are counted per millisecond below.
	svcM, libM := e.machines("service", 1, 1), e.machines("library generator", 1, 1)
	s, err := e.addService(serviceConfig{machines: svcM}.timed(t))
	if err != nil {
		return err
	}
	if err := s.waitServing(e.ctx, 60*time.Second); err != nil {
		return err
	}
	lib, err := e.addLibrary(libraryConfig{machines: libM, generators: 1, rate: 0, batch: 1000}.timed(t))
	if err != nil {
		return err
	}
	if err := lib.waitReady(e.ctx, 60*time.Second); err != nil {
		return err
	}
	load := e.startLoad([]*service{s}, loadConfig{callers: 8, rate: 0, count: 1000, checkAhead: true})
	if err := e.wait(scale(e, 5*time.Second, 150*time.Second)); err != nil {
		return err
	}
	load.stop()
	for _, m := range []struct {
		name    string
		machine int
	}{{"service", firstNumber(svcM)}, {"library generator", firstNumber(libM)}} {
		ticks, most := e.col.perTick(m.machine)
		e.check(m.name+" exhausted its sequence and spilled into the next millisecond", most == 4096,
			"%d milliseconds used, at most %d IDs in one", ticks, most)
	}
	return nil
}
