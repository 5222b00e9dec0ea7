// assert.h for simulated device code (first on the include path of every simulated module): a failed assert is a
// fault the simulator reports with its source line, as the GPU reports a device-side assert, instead of abort()
// taking the process down. Re-includable on purpose, like the standard header, so NDEBUG keeps its meaning.
extern "C" [[noreturn]] void cs_fault(const char* message, int line, const char* file);
#undef assert
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
#define assert(e) ((e) ? (void)0 : cs_fault("assertion failed: " #e, __LINE__, __FILE__))
#endif
