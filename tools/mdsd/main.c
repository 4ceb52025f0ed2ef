// SPDX-License-Identifier: GPL-2.0
/*
 * mdsd: start and stop.  Reads the configuration, opens the backend,
 * starts the HTTP server and (with --agent) the host agent, then waits
 * for SIGTERM/SIGINT and tears down in reverse order: waiters are woken
 * first so that long-polls answer at once.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "curl_load.h"
#include "mdsd.h"
#include "runtime.h"

int main(int argc, char *argv[])
{
	static struct mdsd_config cfg;
	struct http_server *http = NULL;
	struct agent *agent = NULL;
	struct backend *b;
	sigset_t set;
	char why[256];
	int ret, sig = 0;

	ret = mdsd_config_load(&cfg, argc, argv);
	if (ret)
		return ret < 0 ? 0 : ret;
	log_level = cfg.verbose;

	/* Every thread inherits the blocked set; main waits for them. */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	if (dfkv_curl_load(why, sizeof(why))) {
		logmsg(LOG_ERR, "%s", why);
		return 1;
	}
	if (!strcmp(cfg.backend, "etcd"))
		b = etcd_backend_new(&cfg);
	else
		b = mem_backend_new(&cfg);
	if (!b) {
		logmsg(LOG_ERR, "cannot start the %s backend", cfg.backend);
		return 1;
	}
	http = http_start(&cfg, b);
	if (!http) {
		ret = 1;
		goto out;
	}
	if (cfg.agent) {
		agent = agent_start(&cfg, b);
		if (!agent) {
			logmsg(LOG_ERR, "cannot start the host agent");
			ret = 1;
			goto out;
		}
	}
	for (;;) {
		if (sigwait(&set, &sig))
			continue;
		if (sig == SIGHUP) {
			logmsg(LOG_INFO, "SIGHUP: nothing to reload (restart to apply a new configuration)");
			continue;
		}
		break;
	}
	logmsg(LOG_INFO, "signal %d: stopping", sig);
out:
	atomic_store(&mdsd_stopping, true);
	b->ops->shutdown(b);
	agent_stop(agent);
	http_stop(http);
	b->ops->destroy(b);
	return ret;
}
