// The in-place progress line on a terminal is cut to the terminal's width (less one column), so
// that it never wraps and '\r' rewrites all of it; the width follows a resized window, and off a
// terminal $COLUMNS or 80 is used. Checked on a pseudo-terminal of 40 and then 60 columns.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "lib/report/console_summary.h"

namespace nvdet {
namespace {

// Every piece of text between carriage returns and line feeds, as a terminal shows them.
std::vector<std::string> rows_of(const std::string& out) {
  std::vector<std::string> rows(1);
  for (const char c : out) {
    if (c == '\r' || c == '\n') rows.emplace_back();
    else rows.back() += c;
  }
  return rows;
}

TEST(TerminalProgress, LineFitsTheTerminalWidth) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0);
  ASSERT_EQ(::grantpt(master), 0);
  ASSERT_EQ(::unlockpt(master), 0);
  const int slave = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  ASSERT_GE(slave, 0);
  winsize ws{};
  ws.ws_col = 40;
  ws.ws_row = 24;
  ASSERT_EQ(::ioctl(slave, TIOCSWINSZ, &ws), 0);
  EXPECT_EQ(terminal_columns(slave), 40u);
  std::FILE* stream = ::fdopen(slave, "w");
  ASSERT_NE(stream, nullptr);
  const std::string context = "model(batch=64,position=last,prefill_chunk=whole,page_size=16)";
  {
    TerminalProgress p(stream, 0);
    p.update(3, 128, "cuda-vendor-policy", context, 2, 32, "step 120 of 256, 850 tokens/s");
    ws.ws_col = 60;
    ASSERT_EQ(::ioctl(slave, TIOCSWINSZ, &ws), 0);
    p.update(4, 128, "cuda-vendor-policy", context, 2, 32, "step 121 of 256, 851 tokens/s");
    p.finish();
  }
  std::fclose(stream);
  std::string out;
  char buf[4096];
  ::fcntl(master, F_SETFL, ::fcntl(master, F_GETFL) | O_NONBLOCK);
  for (;;) {
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(master);
  const std::vector<std::string> rows = rows_of(out);
  ASSERT_GE(rows.size(), 4u) << out;
  EXPECT_EQ(rows[1].size(), 39u) << rows[1];
  EXPECT_EQ(rows[1], std::string("[   3/128] cuda-vendor-policy model(...").substr(0, 36) + "...");
  EXPECT_EQ(rows[2].size(), 59u) << rows[2];
  EXPECT_EQ(rows[2].substr(0, 30), "[   4/128] cuda-vendor-policy ");
  for (const std::string& row : rows) EXPECT_LE(row.size(), 59u) << row;
}

TEST(TerminalProgress, ColumnsFromTheEnvironmentOffATerminal) {
  const int fd = ::open("/dev/null", O_WRONLY);
  ASSERT_GE(fd, 0);
  ::setenv("COLUMNS", "132", 1);
  EXPECT_EQ(terminal_columns(fd), 132u);
  ::setenv("COLUMNS", "wide", 1);
  EXPECT_EQ(terminal_columns(fd), 80u);
  ::unsetenv("COLUMNS");
  EXPECT_EQ(terminal_columns(fd), 80u);
  ::close(fd);
}

}  // namespace
}  // namespace nvdet
