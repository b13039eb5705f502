// Own main: libsystemc.so carries a main() of its own, so the suites never link gtest_main
// (see shared/docs/systemc-notes.md pitfall 1).
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
