#include "engine/tensor/tensor.h"
int main() { return 0; }
