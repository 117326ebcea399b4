#ifndef HERALD_CCURL_SHIM_H
#define HERALD_CCURL_SHIM_H

#include <curl/curl.h>

/* curl_easy_setopt, curl_multi_setopt and curl_easy_getinfo are variadic, which Swift cannot call.
 * One typed wrapper per argument kind. */
static inline CURLcode herald_curl_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode herald_curl_easy_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode herald_curl_easy_setopt_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode herald_curl_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode herald_curl_easy_setopt_write(CURL *h, size_t (*cb)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, cb);
}
static inline CURLcode herald_curl_easy_setopt_header(CURL *h, size_t (*cb)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, cb);
}
static inline CURLcode herald_curl_easy_setopt_read(CURL *h, size_t (*cb)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(h, CURLOPT_READFUNCTION, cb);
}
static inline CURLMcode herald_curl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
static inline CURLcode herald_curl_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode herald_curl_easy_getinfo_double(CURL *h, CURLINFO i, double *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode herald_curl_easy_getinfo_string(CURL *h, CURLINFO i, char **v) { return curl_easy_getinfo(h, i, v); }

/* A finished transfer of curl_multi_info_read (the result sits in a union). */
static inline int herald_curl_msg_is_done(CURLMsg *m) { return m->msg == CURLMSG_DONE; }
static inline CURLcode herald_curl_msg_result(CURLMsg *m) { return m->data.result; }
static inline CURL *herald_curl_msg_handle(CURLMsg *m) { return m->easy_handle; }

/* Feature bits of the linked libcurl (the macros are not imported as constants on every toolchain). */
static inline int herald_curl_has_http2(void) {
    curl_version_info_data *d = curl_version_info(CURLVERSION_NOW);
    return (d->features & CURL_VERSION_HTTP2) != 0;
}
static inline const char *herald_curl_version(void) {
    return curl_version_info(CURLVERSION_NOW)->version;
}

#endif
