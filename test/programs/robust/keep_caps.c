/* keep_caps: drops to nobody and keeps a capability, as `setpriv --reuid
 * --regid --keep-groups` and libcap-ng's capng_change_id do: keep
 * capabilities across the user change (PR_SET_KEEPCAPS), change the user
 * (glibc applies it to every thread), raise CAP_SETGID again (capset, this
 * thread only), then change the group (every thread again: glibc aborts the
 * process if any thread fails). Needs root.
 *
 * Usage: keep_caps. Prints "keep_caps uid=U gid=G" and exits 0; exit 3 if
 * a step is refused. */
#include <coz.h>
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int capset(cap_user_header_t header, const cap_user_data_t data);  /* glibc's; no header declares it */

static int fail(const char* step) {
  fprintf(stderr, "keep_caps: %s: %s\n", step, strerror(errno));
  return 3;
}

int main(void) {
  const uid_t nobody = 65534;
  if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) return fail("PR_SET_KEEPCAPS");
  if (setresuid(nobody, nobody, nobody) != 0) return fail("setresuid");
  struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2];
  memset(data, 0, sizeof data);
  data[0].permitted = data[0].effective = 1u << CAP_SETGID;
  if (capset(&header, data) != 0) return fail("capset");
  if (setresgid(nobody, nobody, nobody) != 0) return fail("setresgid");
  COZ_PROGRESS_NAMED("dropped");
  printf("keep_caps uid=%d gid=%d\n", (int)getuid(), (int)getgid());
  return 0;
}
