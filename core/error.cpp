#include "core/error.hpp"

#include <iostream>

namespace kappasim {

int report_current_exception() {
  try {
    throw;
  } catch (const InputError& e) {
    std::cerr << "kappasim: error: " << e.what() << "\n";
    return 2;
  } catch (const IoError& e) {
    std::cerr << "kappasim: error: " << e.what() << "\n";
    return e.exit_code();  // 4, or 2 for a path that leads nowhere
  } catch (const std::exception& e) {
    std::cerr << "kappasim: internal error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace kappasim
