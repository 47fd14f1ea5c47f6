// Timeline: where a run's time goes, phase by phase. With DDPRUN_TIMELINE=1 in its environment,
// ddprun notes the moment each phase of its start, its spawns, its restarts and its end is over,
// and prints them to stderr when it exits, one line each, as milliseconds since main began, after
// a first line with the CPU time the process had used by then (the dynamic loader and the static
// initializers):
//
//   ddprun: timeline: 1.21 ms of CPU before main
//   ddprun: timeline: +0.412 ms the job's cgroup is ready
//   ddprun: timeline: +0.655 ms worker started, pid 4242
//
// Off (the default), a note costs one test of a flag. Note may be called from any thread; the
// first 256 notes are kept.
#pragma once

namespace ddprun::timeline {

// Reads DDPRUN_TIMELINE and starts the clock; call first thing in main. Without it nothing is
// noted.
void Begin();

// Notes that `what` happened now. `what` must outlive the process (a string literal); `number`,
// when >= 0, is printed after it (a rank, a count, a pid).
void Note(const char* what, long number = -1);

// Prints the notes to stderr, once; nothing when off. Call before the process exits, when no
// other thread notes anything.
void Print();

}  // namespace ddprun::timeline
