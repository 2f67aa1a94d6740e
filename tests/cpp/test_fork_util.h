// Forking from a test while another thread holds a lock: a child that deadlocks must fail the
// test, not hang it.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <functional>

namespace ptb {

// Forks `count` children one after the other; each runs `child` (its return value is the exit
// status, 0 for success) under a 10 s alarm, so a deadlocked child dies of SIGALRM. Returns
// how many children hung or failed (-1 when fork() itself failed).
inline int forked_children_failing(int count, const std::function<int()>& child) {
  int failing = 0;
  for (int i = 0; i < count; ++i) {
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
      alarm(10);
      _exit(child());
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failing;
  }
  return failing;
}

}  // namespace ptb
