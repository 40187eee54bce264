/*
 * Bytes in and out: a growable buffer, whole-file reads, and the spool's JSON records,
 * written with a fixed format and escaped strings (there is no JSON parsing here; the
 * agent reads the records). Records are written to a temporary file and renamed, so a
 * reader sees the old file or the new one, never half of one; the file's mtime is the
 * record's timestamp (records.ts reads it as the start or end time).
 */
#include "rank-supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *rs_alloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		abort();
	return p;
}

void rs_buf_add(struct rs_buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p)
			abort();
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void rs_buf_printf(struct rs_buf *b, const char *fmt, ...)
{
	char small[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof small) {
		rs_buf_add(b, small, (size_t)n);
		return;
	}
	char *big = rs_alloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	rs_buf_add(b, big, (size_t)n);
	free(big);
}

/* A JSON string: '"' and '\' escaped, bytes below 0x20 as \u00XX, all others as they are (the agent reads them). */
void rs_buf_json_str(struct rs_buf *b, const char *s)
{
	rs_buf_lit(b, "\"");
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\') {
			char esc[2] = { '\\', (char)*p };
			rs_buf_add(b, esc, 2);
		} else if (*p < 0x20) {
			rs_buf_printf(b, "\\u%04x", *p);
		} else {
			rs_buf_add(b, (const char *)p, 1);
		}
	}
	rs_buf_lit(b, "\"");
}

/* Appends everything up to EOF; -1 on a read error. */
int rs_read_fd(int fd, struct rs_buf *b)
{
	char chunk[4096];
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof chunk);
		if (n > 0)
			rs_buf_add(b, chunk, (size_t)n);
		else if (n == 0)
			return 0;
		else if (errno != EINTR)
			return -1;
	}
}

int rs_read_file(const char *file, struct rs_buf *b)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int r = rs_read_fd(fd, b);
	close(fd);
	return r;
}

char *rs_path(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = rs_alloc(n);
	snprintf(p, n, "%s/%s", dir, name);
	return p;
}

static int write_all(int fd, const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Write-then-rename; 0 when the record is in place. */
int rs_write_record(const char *file, const char *json)
{
	struct rs_buf tmp = { 0 };
	rs_buf_printf(&tmp, "%s.%d.tmp", file, (int)getpid());
	int fd = open(tmp.p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	int ok = fd >= 0 && write_all(fd, json, strlen(json)) == 0 && write_all(fd, "\n", 1) == 0;
	if (fd >= 0 && close(fd) != 0)
		ok = 0;
	ok = ok && rename(tmp.p, file) == 0;
	free(tmp.p);
	return ok ? 0 : -1;
}

/* Field 22 of /proc/self/stat (start time in clock ticks), or null: with the pid it names this process for the life of the system. */
void rs_start_ticks(struct rs_buf *b)
{
	struct rs_buf stat = { 0 };
	const char *field = NULL;
	size_t field_len = 0;
	if (rs_read_file("/proc/self/stat", &stat) == 0 && stat.p) {
		/* the command name may hold spaces and parentheses: count after the last ") " */
		char *p = strrchr(stat.p, ')');
		if (p && p[1] == ' ') {
			p += 2;
			for (int i = 0; i < 19 && p; i++) {
				p = strchr(p, ' ');
				if (p)
					p++;
			}
			if (p) {
				field = p;
				field_len = strcspn(p, " \n");
			}
		}
	}
	if (field && field_len > 0)
		rs_buf_add(b, field, field_len);
	else
		rs_buf_lit(b, "null");
	free(stat.p);
}
