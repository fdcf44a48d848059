// The predefined MPI datatypes the preload serves and the libcollx types and ops they map to.
#include "pmpi/preload.h"

namespace collx_mpi {
namespace {

// The predefined types the preload serves (MPI 4.0's C integer, Fortran integer, floating
// point, complex, byte and multi-language types that libcollx has, and MPICH's float16), by
// kind. Their libcollx type follows from kind and size, which load_types() reads from the MPI
// library (MPI_INTEGER, MPI_LONG, ... have the sizes that library was built with). The most
// used come first: to_dtype scans the list.
struct TypeKind {
  MPI_Datatype mpi;
  Kind kind;
};
const TypeKind kTypes[] = {
    {MPI_FLOAT, kFloat},           {MPI_DOUBLE, kFloat},           {MPI_INT, kSigned},
    {MPI_LONG, kSigned},           {MPI_LONG_LONG, kSigned},       {MPI_UNSIGNED, kUnsigned},
    {MPI_UNSIGNED_LONG, kUnsigned}, {MPI_UNSIGNED_LONG_LONG, kUnsigned},
    // (MPICH's char is signed: MPI_CHAR with MPI_SUM wraps like signed char there.)
    {MPI_CHAR, kSigned},           {MPI_SIGNED_CHAR, kSigned},     {MPI_UNSIGNED_CHAR, kUnsigned},
    {MPI_SHORT, kSigned},          {MPI_UNSIGNED_SHORT, kUnsigned},
    {MPI_INT8_T, kSigned},         {MPI_UINT8_T, kUnsigned},       {MPI_INT16_T, kSigned},
    {MPI_UINT16_T, kUnsigned},     {MPI_INT32_T, kSigned},         {MPI_UINT32_T, kUnsigned},
    {MPI_INT64_T, kSigned},        {MPI_UINT64_T, kUnsigned},
    // Fortran's, usable from C too.
    {MPI_REAL, kFloat},            {MPI_DOUBLE_PRECISION, kFloat}, {MPI_INTEGER, kSigned},
    {MPI_REAL4, kFloat},           {MPI_REAL8, kFloat},            {MPI_INTEGER1, kSigned},
    {MPI_INTEGER2, kSigned},       {MPI_INTEGER4, kSigned},        {MPI_INTEGER8, kSigned},
    {MPI_AINT, kSigned},           {MPI_OFFSET, kSigned},          {MPI_COUNT, kSigned},
    {MPI_BYTE, kByte},
    // Complex (C, C++ and Fortran): pairs of their floating type, for MPI_SUM.
    {MPI_C_DOUBLE_COMPLEX, kComplex}, {MPI_C_FLOAT_COMPLEX, kComplex},
    {MPI_DOUBLE_COMPLEX, kComplex},   {MPI_COMPLEX, kComplex},
    {MPI_CXX_DOUBLE_COMPLEX, kComplex}, {MPI_CXX_FLOAT_COMPLEX, kComplex},
    {MPI_COMPLEX16, kComplex},        {MPI_COMPLEX8, kComplex},
#ifdef MPIX_C_FLOAT16
    // IEEE half precision, an MPICH extension (MPICH 4.0.2 itself aborts on its reductions).
    {MPIX_C_FLOAT16, kFloat},
#endif
};
constexpr int kTypeCount = sizeof(kTypes) / sizeof(kTypes[0]);

// What load_types() found for kTypes[i]: its libcollx type, or served[i] false (a size libcollx
// has no type for, or a type this MPI library does not have).
struct TypeTable {
  bool served[kTypeCount] = {};
  collx_dtype_t dtype[kTypeCount] = {};
};
TypeTable g_types;

// The libcollx type of a `kind` of `size` bytes (of a complex one: of its two parts); false if
// libcollx has none (MPI_REAL16, MPI_COMPLEX32).
bool dtype_of(Kind kind, int size, collx_dtype_t* d) {
  static const collx_dtype_t kSignedBySize[] = {COLLX_INT8, COLLX_INT16, COLLX_INT32, COLLX_INT64};
  static const collx_dtype_t kUnsignedBySize[] = {COLLX_UINT8, COLLX_UINT16, COLLX_UINT32,
                                                  COLLX_UINT64};
  switch (kind) {
    case kComplex:
      return size % 2 == 0 && dtype_of(kFloat, size / 2, d);
    case kFloat:
      *d = size == 2 ? COLLX_FLOAT16 : size == 4 ? COLLX_FLOAT32 : COLLX_FLOAT64;
      return size == 2 || size == 4 || size == 8;
    case kByte:
      *d = COLLX_UINT8;
      return size == 1;
    default:
      for (int i = 0; i < 4; ++i) {
        if (size == 1 << i) {
          *d = kind == kSigned ? kSignedBySize[i] : kUnsignedBySize[i];
          return true;
        }
      }
      return false;
  }
}

}  // namespace

void load_types() {
  for (int i = 0; i < kTypeCount; ++i) {
    int size = 0;
    g_types.served[i] = kTypes[i].mpi != MPI_DATATYPE_NULL &&
                        PMPI_Type_size(kTypes[i].mpi, &size) == MPI_SUCCESS &&
                        dtype_of(kTypes[i].kind, size, &g_types.dtype[i]);
  }
}

bool to_dtype(MPI_Datatype t, collx_dtype_t* d, Kind* kind) {
  for (int i = 0; i < kTypeCount; ++i) {
    if (kTypes[i].mpi == t) {
      *d = g_types.dtype[i];
      *kind = kTypes[i].kind;
      return g_types.served[i];
    }
  }
  return false;
}

bool to_op(MPI_Op op, Kind kind, collx_op_t* o) {
  // (A complex sum is the sums of its parts; its product, the only other op MPI defines for
  // it, is not the parts' products.)
  if (kind == kComplex) {
    *o = COLLX_SUM;
    return op == MPI_SUM;
  }
  const bool number = kind != kByte, bits = kind != kFloat;
  if (op == MPI_SUM && number) *o = COLLX_SUM;
  else if (op == MPI_PROD && number) *o = COLLX_PROD;
  else if (op == MPI_MIN && number) *o = COLLX_MIN;
  else if (op == MPI_MAX && number) *o = COLLX_MAX;
  else if (op == MPI_BAND && bits) *o = COLLX_BAND;
  else if (op == MPI_BOR && bits) *o = COLLX_BOR;
  else if (op == MPI_BXOR && bits) *o = COLLX_BXOR;
  else return false;  // MPI's own answer, or its own error, for everything else
  return true;
}

}  // namespace collx_mpi
