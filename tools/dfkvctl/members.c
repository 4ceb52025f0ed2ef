// SPDX-License-Identifier: GPL-2.0
/*
 * dfkvctl members | clients | groups: the mdsd directory (SPEC.md 7) as a
 * table or as JSON, and "members|clients del ID" to remove an entry.
 * HTTP through libdfkv's libcurl helper (http.c), records decoded by
 * mdsd's own codec (record.c); a write sends the bearer token of
 * --token-file (read by libdfkv's token reader, the one mdsd uses).
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "dfkvctl.h"
#include "http.h"
#include "record.h"

static const char help_members[] =
	"NAME\n"
	"    dfkvctl members, clients, groups - show or edit the mdsd directory\n"
	"\n"
	"SYNOPSIS\n"
	"    dfkvctl members --mds URL [--group G] [--json]\n"
	"    dfkvctl clients --mds URL [--group G] [--json]\n"
	"    dfkvctl groups  --mds URL [--json]\n"
	"    dfkvctl members del ID --mds URL [--group G] [--token-file FILE] [--json]\n"
	"    dfkvctl clients del ID --mds URL [--group G] [--token-file FILE] [--json]\n"
	"\n"
	"DESCRIPTION\n"
	"    Reads the membership directory of mdsd (GET /v1/groups,\n"
	"    /v1/groups/G/members, /v1/groups/G/clients) and prints it as a\n"
	"    table, or with --json as the JSON mdsd answered (pretty-printed).\n"
	"    members lists the cache nodes of a group (the ring: id, TCP and\n"
	"    RDMA address, weight, host, state, lease TTL), clients the\n"
	"    registered inference instances, groups the known groups.\n"
	"\n"
	"    del removes one entry (DELETE /v1/groups/G/members/ID): a member\n"
	"    leaves every client's ring at once instead of when its lease runs\n"
	"    out.  A node whose host agent still runs registers again at its\n"
	"    next heartbeat; stop the agent or delete the node first.  When\n"
	"    mdsd runs with --token-file, del needs the same token.\n"
	"\n"
	"OPTIONS\n"
	"    -m, --mds URL     mdsd base URL, e.g. http://127.0.0.1:7480\n"
	"                      (default: $DFKV_MDS); a comma-separated list is\n"
	"                      tried in order\n"
	"    -g, --group G     the group (default \"default\")\n"
	"    -t, --token-file FILE  bearer token for del (default:\n"
	"                      $DFKV_MDS_TOKEN_FILE); mode 0600, at most 4096\n"
	"                      bytes, one trailing newline stripped.  Reads do\n"
	"                      not send it.\n"
	"    -j, --json        print JSON\n"
	"\n"
	"EXIT STATUS\n"
	"    0 success; 2 usage error or an unusable token file; 3 mdsd\n"
	"    unreachable, an error answer (a refused token is HTTP 401, an\n"
	"    absent entry 404) or a bad answer.\n"
	"\n"
	"EXAMPLES\n"
	"    $ dfkvctl members --mds http://127.0.0.1:7480 --group prod\n"
	"    epoch 1732881512345, 2 members\n"
	"    ID    TCP             RDMA  WEIGHT  HOST      STATE  TTL_MS\n"
	"    kv0   10.0.0.5:7400   -          1  cache-05  up      10000\n"
	"    kv1   10.0.0.6:7400   -          2  cache-06  up      10000\n"
	"    $ dfkvctl members del kv1 --mds http://127.0.0.1:7480 --group prod \\\n"
	"          --token-file /etc/dfkv/mds.token\n"
	"    deleted kv1 from prod (epoch 1732881519876)\n";

/* libcurl, loaded on the first directory command (lib/curl_load.h). */
static int curl_ready(void)
{
	char why[256];

	if (!dfkv_curl_load(why, sizeof(why)))
		return EXIT_OK;
	err_msg("%s", why);
	return EXIT_FAIL;
}

/*
 * method base+path at the first URL that answers 200 with a JSON object;
 * auth (a curl "Authorization: Bearer" header list, or NULL) goes with
 * it.
 */
static int mds_call(const char *mds, const char *method, const char *path,
		    struct curl_slist *auth, struct json_object **out)
{
	char *list = strdup(mds), *save = NULL, *u;
	int ret = EXIT_FAIL;

	*out = NULL;
	if (!list || curl_ready()) {
		free(list);
		return EXIT_FAIL;
	}
	for (u = strtok_r(list, ",", &save); u && ret; u = strtok_r(NULL, ",", &save)) {
		struct dfkv_http_buf b = { 0 };
		char url[2048];
		const struct dfkv_http_req req = {
			.method = method,
			.url = url,
			.hdrs = auth,
			.connect_timeout_ms = 2000,
			.timeout_ms = 10000,
		};
		size_t n = strlen(u);
		long status;
		CURLcode rc;

		while (n && u[n - 1] == '/')
			u[--n] = 0;
		snprintf(url, sizeof(url), "%s%s", u, path);
		rc = dfkv_http_call(&req, &b, &status);
		if (rc == CURLE_OUT_OF_MEMORY)
			break;
		if (rc != CURLE_OK) {
			err_msg("%s: %s", url, dfkv_curl.easy_strerror(rc));
		} else if (status != 200) {
			while (b.len && b.p[b.len - 1] == '\n')
				b.p[--b.len] = 0;
			err_msg("%s: HTTP %ld%s%s%s", url, status, b.p ? ": " : "",
				b.p ? b.p : "", status == 401 && !auth ?
				" (mdsd wants a token: --token-file)" : "");
		} else {
			struct json_object *o = b.p ? json_tokener_parse(b.p) : NULL;

			if (o && json_object_is_type(o, json_type_object)) {
				*out = o;
				ret = EXIT_OK;
			} else {
				json_object_put(o);
				err_msg("%s: the answer is not a JSON object", url);
			}
		}
		dfkv_http_buf_free(&b);
	}
	free(list);
	return ret;
}

/* "Authorization: Bearer <token>" of a token file, as a curl header list. */
static int auth_header(const char *path, struct curl_slist **out)
{
	char why[1200];
	int err;

	*out = NULL;
	if (curl_ready())
		return EXIT_FAIL;
	err = dfkv_http_bearer(out, path, why, sizeof(why));
	if (err == -ENOMEM)
		return EXIT_FAIL;
	if (err) {
		err_msg("%s", why);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/* DELETE one entry; prints what mdsd answered. */
static int delete_entry(const char *mds, const char *group, const char *kind,
			const char *id, const char *token_file, bool json)
{
	struct curl_slist *auth = NULL;
	struct json_object *o, *ep;
	char path[256];
	int ret;

	if (token_file) {
		ret = auth_header(token_file, &auth);
		if (ret)
			return ret;
	}
	snprintf(path, sizeof(path), "/v1/groups/%s/%s/%s", group, kind, id);
	ret = mds_call(mds, "DELETE", path, auth, &o);
	dfkv_http_hdrs_free(auth);		/* wipes the token */
	if (ret)
		return ret;
	if (json)
		printf("%s\n", json_object_to_json_string_ext(o,
			JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	else
		printf("deleted %s from %s (epoch %s)\n", id, group,
		       json_object_object_get_ex(o, "epoch", &ep) ?
		       json_object_to_json_string(ep) : "-");
	json_object_put(o);
	return EXIT_OK;
}

/* A column: "-" for an empty string. */
static const char *col(const char *s)
{
	return s[0] ? s : "-";
}

static int print_entries(struct json_object *o, const char *kind)
{
	struct json_object *arr, *ep;
	struct mds_entry *v;
	char why[128];
	size_t n, i;
	int w[4] = { 2, 3, 4, 4 };	/* ID TCP RDMA HOST */
	int ret = EXIT_OK;

	if (!json_object_object_get_ex(o, kind, &arr) ||
	    !json_object_is_type(arr, json_type_array)) {
		err_msg("the answer has no \"%s\" array", kind);
		return EXIT_FAIL;
	}
	n = json_object_array_length(arr);
	json_object_object_get_ex(o, "epoch", &ep);
	printf("epoch %s, %zu %s\n", ep ? json_object_to_json_string(ep) : "-",
	       n, n == 1 ? (kind[0] == 'm' ? "member" : "client") : kind);
	if (!n)
		return EXIT_OK;
	v = calloc(n, sizeof(*v));
	if (!v)
		return EXIT_FAIL;
	for (i = 0; i < n; i++) {
		const char *c[4];

		if (mds_entry_decode(json_object_array_get_idx(arr, i), NULL, 0,
				     true, &v[i], why, sizeof(why))) {
			err_msg("entry %zu of the answer: %s", i, why);
			ret = EXIT_FAIL;
			goto out;
		}
		c[0] = v[i].id;
		c[1] = col(v[i].tcp);
		c[2] = col(v[i].rdma);
		c[3] = col(v[i].host);
		for (int k = 0; k < 4; k++)
			if ((int)strlen(c[k]) > w[k])
				w[k] = (int)strlen(c[k]);
	}
	printf("%-*s  %-*s  %-*s  %6s  %-*s  %-9s  %s\n", w[0], "ID", w[1], "TCP",
	       w[2], "RDMA", "WEIGHT", w[3], "HOST", "STATE", "TTL_MS");
	for (i = 0; i < n; i++)
		printf("%-*s  %-*s  %-*s  %6u  %-*s  %-9s  %llu\n",
		       w[0], v[i].id, w[1], col(v[i].tcp), w[2], col(v[i].rdma),
		       v[i].weight, w[3], col(v[i].host),
		       mds_state_name(v[i].state),
		       (unsigned long long)v[i].ttl_ms);
out:
	free(v);
	return ret;
}

static int directory_main(const char *cmd, int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "mds", required_argument, NULL, 'm' },
		{ "group", required_argument, NULL, 'g' },
		{ "token-file", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *mds = getenv("DFKV_MDS"), *group = "default";
	const char *token_file = getenv("DFKV_MDS_TOKEN_FILE");
	bool json = false, groups = !strcmp(cmd, "groups");
	struct json_object *o;
	char path[128];
	int c, ret;

	if (wants_help(argc, argv))
		return print_help(help_members);
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":m:g:t:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			mds = optarg;
			break;
		case 'g':
			if (groups)
				return usage_error(cmd, "groups takes no --group");
			group = optarg;
			break;
		case 't':
			token_file = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			return print_help(help_members);
		default:
			return opt_error(cmd, c, argv);
		}
	}
	if (!mds || !*mds)
		return usage_error(cmd, "--mds URL is required (or set DFKV_MDS)");
	if (!mds_id_valid(group))
		return usage_error(cmd, "bad group '%s' ([A-Za-z0-9._-]{1,64})",
				   group);
	if (!groups && optind < argc && !strcmp(argv[optind], "del")) {
		if (optind + 2 != argc)
			return usage_error(cmd, "del takes one ID");
		if (!mds_id_valid(argv[optind + 1]))
			return usage_error(cmd, "bad id '%s' ([A-Za-z0-9._-]{1,64})",
					   argv[optind + 1]);
		return delete_entry(mds, group, cmd, argv[optind + 1],
				    token_file && *token_file ? token_file : NULL,
				    json);
	}
	if (optind < argc)
		return usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	if (groups)
		snprintf(path, sizeof(path), "/v1/groups");
	else
		snprintf(path, sizeof(path), "/v1/groups/%s/%s", group, cmd);
	ret = mds_call(mds, "GET", path, NULL, &o);
	if (ret)
		return ret;
	if (json) {
		printf("%s\n", json_object_to_json_string_ext(o,
			JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	} else if (groups) {
		struct json_object *arr;

		if (!json_object_object_get_ex(o, "groups", &arr) ||
		    !json_object_is_type(arr, json_type_array)) {
			err_msg("the answer has no \"groups\" array");
			ret = EXIT_FAIL;
		} else {
			for (size_t i = 0; i < json_object_array_length(arr); i++)
				printf("%s\n", json_object_get_string(
					json_object_array_get_idx(arr, i)));
		}
	} else {
		ret = print_entries(o, cmd);
	}
	json_object_put(o);
	return ret;
}

int members_main(int argc, char *argv[])
{
	return directory_main("members", argc, argv);
}

int clients_main(int argc, char *argv[])
{
	return directory_main("clients", argc, argv);
}

int groups_main(int argc, char *argv[])
{
	return directory_main("groups", argc, argv);
}
