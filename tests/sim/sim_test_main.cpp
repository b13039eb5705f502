// Own main for the SystemC suites. Each TEST that simulates calls run_simulation() once; ctest
// runs every TEST in its own process (SystemC allows one simulation per process).
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
