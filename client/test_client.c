/* test_client.c: placeholder */
int main(void) { return 0; }
