// SPDX-License-Identifier: GPL-2.0
/*
 * dfkvctl members | clients | groups: the mdsd directory (SPEC.md 7) as a
 * table or as JSON, and "members|clients del ID" to remove an entry.
 * HTTP through libcurl, JSON through json-c; a write sends the bearer
 * token of --token-file (read by libdfkv's token reader, the one mdsd
 * uses).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <json-c/json.h>
#include <openssl/crypto.h>

#include "dfkvctl.h"
#include "token.h"

#define BODY_MAX	(16u << 20)

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

struct body {
	char *p;
	size_t len;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct body *b = ud;
	size_t n = size * nmemb;
	char *p;

	if (n > BODY_MAX - b->len)
		return 0;
	p = realloc(b->p, b->len + n + 1);
	if (!p)
		return 0;
	memcpy(p + b->len, ptr, n);
	b->len += n;
	p[b->len] = 0;
	b->p = p;
	return n;
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
	if (!list)
		return EXIT_FAIL;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	for (u = strtok_r(list, ",", &save); u && ret; u = strtok_r(NULL, ",", &save)) {
		struct body b = { 0 };
		char url[2048];
		size_t n = strlen(u);
		long status = 0;
		CURLcode rc;
		CURL *h;

		while (n && u[n - 1] == '/')
			u[--n] = 0;
		snprintf(url, sizeof(url), "%s%s", u, path);
		h = curl_easy_init();
		if (!h)
			break;
		curl_easy_setopt(h, CURLOPT_URL, url);
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, auth);
		curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
		rc = curl_easy_perform(h);
		if (rc == CURLE_OK)
			curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
		curl_easy_cleanup(h);
		if (rc != CURLE_OK) {
			err_msg("%s: %s", url, curl_easy_strerror(rc));
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
		free(b.p);
	}
	free(list);
	curl_global_cleanup();
	return ret;
}

/* "Authorization: Bearer <token>" of a token file, as a curl header list. */
static int auth_header(const char *path, struct curl_slist **out)
{
	char tok[DFKV_TOKEN_MAX + 1], hdr[DFKV_TOKEN_MAX + 32], why[1200];

	*out = NULL;
	if (dfkv_token_read(path, tok, sizeof(tok), why, sizeof(why))) {
		err_msg("%s", why);
		return EXIT_USAGE;
	}
	snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s", tok);
	*out = curl_slist_append(NULL, hdr);
	OPENSSL_cleanse(tok, sizeof(tok));
	OPENSSL_cleanse(hdr, sizeof(hdr));
	return *out ? EXIT_OK : EXIT_FAIL;
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
	if (auth)
		OPENSSL_cleanse(auth->data, strlen(auth->data));
	curl_slist_free_all(auth);
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

static const char *str_of(struct json_object *e, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(e, key, &v) || !v)
		return "-";
	if (json_object_is_type(v, json_type_string))
		return json_object_get_string(v)[0] ? json_object_get_string(v) : "-";
	return json_object_to_json_string(v);
}

static int print_entries(struct json_object *o, const char *kind)
{
	struct json_object *arr, *ep;
	size_t n, i;
	int w[4] = { 2, 3, 4, 4 };	/* ID TCP RDMA HOST */
	static const char *const col[4] = { "id", "tcp", "rdma", "host" };

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
	for (i = 0; i < n; i++)
		for (int k = 0; k < 4; k++) {
			int l = (int)strlen(str_of(json_object_array_get_idx(arr, i),
						   col[k]));
			if (l > w[k])
				w[k] = l;
		}
	printf("%-*s  %-*s  %-*s  %6s  %-*s  %-9s  %s\n", w[0], "ID", w[1], "TCP",
	       w[2], "RDMA", "WEIGHT", w[3], "HOST", "STATE", "TTL_MS");
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);

		printf("%-*s  %-*s  %-*s  %6s  %-*s  %-9s  %s\n",
		       w[0], str_of(e, "id"), w[1], str_of(e, "tcp"),
		       w[2], str_of(e, "rdma"), str_of(e, "weight"),
		       w[3], str_of(e, "host"), str_of(e, "state"),
		       str_of(e, "ttl_ms"));
	}
	return EXIT_OK;
}

static bool id_ok(const char *g)
{
	size_t n = strlen(g);

	if (!n || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((g[i] >= 'a' && g[i] <= 'z') || (g[i] >= 'A' && g[i] <= 'Z') ||
		      (g[i] >= '0' && g[i] <= '9') || strchr("._-", g[i])))
			return false;
	return true;
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
	if (!id_ok(group))
		return usage_error(cmd, "bad group '%s' ([A-Za-z0-9._-]{1,64})",
				   group);
	if (!groups && optind < argc && !strcmp(argv[optind], "del")) {
		if (optind + 2 != argc)
			return usage_error(cmd, "del takes one ID");
		if (!id_ok(argv[optind + 1]))
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
