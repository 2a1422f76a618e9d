// An allocator of cache-line-aligned storage, for the cache's code and scale streams:
// a key's codes (64 bytes at head dim 128 and 4 bits) and a register of 16 scales then
// fill a cache line instead of straddling two, which cost AVX-512's 64-byte loads
// about a tenth of their bandwidth from DRAM (docs/benchmarks.md, "score from DRAM").
// std::vector's own storage from malloc is 16-byte aligned: 16 bytes past a page for
// large blocks.
#pragma once

#include <cstddef>
#include <new>

namespace tq::detail {

inline constexpr std::size_t kCacheLine = 64;

template <class T>
struct CacheLineAllocator {
    using value_type = T;
    CacheLineAllocator() = default;
    template <class U>
    CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}
    T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{kCacheLine})); }
    void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t{kCacheLine}); }
    template <class U>
    bool operator==(const CacheLineAllocator<U>&) const noexcept { return true; }
};

}  // namespace tq::detail
