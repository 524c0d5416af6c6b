// Package zktest starts Debian's ZooKeeper (the zookeeper package, 3.8)
// for the tests of zkstore: one server (Start(t, 1)) or an ensemble of
// three (Start(t, 3)), each a java process of its own on loopback ports
// found free, with a data directory of its own under the test's temporary
// directory.
//
// An Ensemble plays what the fence must survive: a server stopped
// (SIGTERM), killed (SIGKILL) or frozen (SIGSTOP) and started or thawed
// again, and a backup restore — CopyData takes a cold copy of every
// server's data directory while all are stopped, and Restore puts it back:
// the same servers, the same ports, older data, and nothing in the
// servers' identity that says so (their zxids may repeat ones they issued
// after the copy).
//
// When java or /usr/share/java/zookeeper.jar is missing, or a server will
// not start, the test is skipped, or fails under CI=true
// (testenv.Missing). Install it with apt-get install zookeeper. Every wait
// for a server is a poll of its four-letter-word port ("srvr") with a
// bound; everything is stopped and removed when the test ends.
package zktest
