// fmt's compiled part, built once for the analyzer.
//
// Debian's libfmt-dev ships fmt as a shared library only, and the CLI must not depend on
// it (it travels in the wheel), so fmt used to be header-only here: every file that
// included fmt/format.h compiled all of fmt's formatting engine again, about 2.7 CPU-s
// per file with g++ -O2 and 4.8 with clang's sanitizers, in each of the two trees
// ./tools/test builds. Now those files see fmt's declarations only and this file defines
// what they call: the non-template functions in format-inl.h, and the templates that
// format.h declares but leaves to the library (explicit instantiations below; a missing
// one is a link error, not a silent difference).
#include "fmt/format-inl.h"

FMT_BEGIN_NAMESPACE
namespace detail {

template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;

template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;

template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API void buffer<char>::append(const char*, const char*);
template FMT_API void vformat_to(buffer<char>&, string_view, basic_format_args<FMT_BUFFER_CONTEXT(char)>,
                                 locale_ref);

}  // namespace detail
FMT_END_NAMESPACE
